package org.mpibuild.it;

import com.sun.source.tree.AnnotationTree;
import com.sun.source.tree.CompilationUnitTree;
import com.sun.source.tree.LineMap;
import com.sun.source.tree.MethodTree;
import com.sun.source.util.JavacTask;
import com.sun.source.util.SourcePositions;
import com.sun.source.util.TreeScanner;
import com.sun.source.util.Trees;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.ToolProvider;

/**
 * The size rule of main code (issue 42): no file over {@link #MAX_FILE_LINES} lines, no method or constructor
 * over {@link #MAX_METHOD_LINES} (a screen). A method's lines run from its declaration, after its annotations,
 * to its closing brace; the Javadoc above it does not count. Lambdas and local classes count in the method
 * around them, and the methods of local and anonymous classes are measured as well.
 *
 * <p>Sources are read by javac's own parser (the JDK's {@code com.sun.source} API), so braces in strings,
 * comments or annotations never mislead it. A file it cannot parse is a breach: the rule cannot vouch for it.
 */
final class SourceSizes {
  static final int MAX_FILE_LINES = 450;
  static final int MAX_METHOD_LINES = 60;

  private SourceSizes() {
  }

  /** One breach of the rule: a file, the line where the long part starts, what it is and how long. */
  record Breach(String file, int line, String what, long lines, int limit) {
    @Override
    public String toString() {
      return file + ":" + line + ": " + what + " has " + lines + " lines (at most " + limit + ")";
    }
  }

  /** A method or constructor with a body: its name, the line its declaration starts at, the lines it spans. */
  record Method(String name, int line, int lines) {
  }

  /**
   * Every breach in the main code ({@code src/main/java*}) of every module under {@code repo}, but for the
   * files in {@code exempt}: paths relative to {@code repo}, or folders, ending in {@code /}, whose files are
   * all exempt.
   */
  static List<Breach> inRepository(Path repo, Set<String> exempt) throws IOException {
    List<Breach> breaches = new ArrayList<>();
    for (Path file : mainSources(repo)) {
      String name = slashes(repo.relativize(file));
      if (exempt.stream().noneMatch(e -> e.endsWith("/") ? name.startsWith(e) : name.equals(e))) {
        breaches.addAll(of(name, Files.readString(file)));
      }
    }
    return breaches;
  }

  /** The Java files of every module's main code under {@code repo}; build outputs and hidden folders left out. */
  static List<Path> mainSources(Path repo) throws IOException {
    try (Stream<Path> files = Files.walk(repo)) {
      return files.filter(f -> isMainSource(slashes(repo.relativize(f)))).sorted().toList();
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
  }

  /** Whether a path relative to the repository is a Java file of a module's main code. */
  static boolean isMainSource(String relative) {
    return relative.endsWith(".java") && relative.matches("(?:[^./][^/]*/)*src/main/java[^/]*/.+")
        && !relative.matches("(?:.*/)?target/.*");
  }

  /** Every breach in one source file's text; {@code file} only names it in the breaches. */
  static List<Breach> of(String file, String source) {
    List<Breach> breaches = new ArrayList<>();
    long fileLines = source.lines().count();
    if (fileLines > MAX_FILE_LINES) {
      breaches.add(new Breach(file, 1, "the file", fileLines, MAX_FILE_LINES));
    }
    DiagnosticCollector<JavaFileObject> errors = new DiagnosticCollector<>();
    List<Method> methods = methods(file, source, errors);
    for (Diagnostic<? extends JavaFileObject> d : errors.getDiagnostics()) {
      if (d.getKind() == Diagnostic.Kind.ERROR) {
        breaches.add(new Breach(file, (int) d.getLineNumber(), "unparsable: " + d.getMessage(null), 0, 0));
      }
    }
    for (Method m : methods) {
      if (m.lines() > MAX_METHOD_LINES) {
        breaches.add(new Breach(file, m.line(), m.name() + "()", m.lines(), MAX_METHOD_LINES));
      }
    }
    return breaches;
  }

  /** Every method and constructor with a body in {@code source}, nested ones included, in source order. */
  static List<Method> methods(String file, String source, DiagnosticCollector<JavaFileObject> errors) {
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    JavaFileObject unit = new SimpleJavaFileObject(URI.create("string:///" + file), JavaFileObject.Kind.SOURCE) {
      @Override
      public CharSequence getCharContent(boolean ignoreEncodingErrors) {
        return source;
      }
    };
    JavacTask task = (JavacTask) javac.getTask(null, null, errors, List.of("-proc:none"), null, List.of(unit));
    SourcePositions positions = Trees.instance(task).getSourcePositions();
    List<Method> methods = new ArrayList<>();
    try {
      for (CompilationUnitTree tree : task.parse()) {
        new TreeScanner<Void, Void>() {
          @Override
          public Void visitMethod(MethodTree method, Void unused) {
            if (method.getBody() != null) {
              methods.add(measure(tree, positions, method, source));
            }
            return super.visitMethod(method, unused);
          }
        }.scan(tree, null);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return methods;
  }

  private static Method measure(CompilationUnitTree tree, SourcePositions positions, MethodTree method,
      String source) {
    long start = positions.getStartPosition(tree, method);
    for (AnnotationTree annotation : method.getModifiers().getAnnotations()) {
      start = Math.max(start, positions.getEndPosition(tree, annotation));
    }
    while (start < source.length() && Character.isWhitespace(source.charAt((int) start))) {
      start++;
    }
    LineMap lines = tree.getLineMap();
    int first = (int) lines.getLineNumber(start);
    int last = (int) lines.getLineNumber(positions.getEndPosition(tree, method) - 1);
    return new Method(method.getName().toString(), first, last - first + 1);
  }

  private static String slashes(Path relative) {
    return relative.toString().replace('\\', '/');
  }

  /** Prints every breach under the folder given (the working directory by default), nothing exempt. */
  public static void main(String[] args) throws IOException {
    Path repo = Path.of(args.length > 0 ? args[0] : ".").toAbsolutePath().normalize();
    inRepository(repo, Set.of()).forEach(System.out::println);
  }
}

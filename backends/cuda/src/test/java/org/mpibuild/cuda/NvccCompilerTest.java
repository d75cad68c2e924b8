package org.mpibuild.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mpibuild.CompileException;
import org.mpibuild.KernelSource;

/**
 * nvcc's command line and run, without CUDA: a stand-in nvcc (a shell script) reports the arguments it was
 * given and the directory it ran in.
 */
class NvccCompilerTest {
  static final KernelSource SOURCE = KernelSource.of("extern \"C\" __global__ void k() {}").withKernels("k");

  @TempDir
  Path tmp;

  /** A stand-in nvcc: {@code body} runs after {@code --version} is answered. */
  Path fakeNvcc(String body) throws IOException {
    Path nvcc = tmp.resolve("nvcc");
    Files.writeString(nvcc, "#!/bin/sh\n"
        + "if [ \"$1\" = --version ]; then echo 'Cuda compilation tools, release 12.4, V12.4.131'; exit 0; fi\n"
        + body);
    Files.setPosixFilePermissions(nvcc, PosixFilePermissions.fromString("rwx------"));
    return nvcc;
  }

  /** Writes, into the file after -o, the mode and path of its working directory, then its command, one word a line. */
  static final String REPORT = "out=; prev=\n"
      + "for a in \"$@\"; do if [ \"$prev\" = -o ]; then out=$a; fi; prev=$a; done\n"
      + "{ stat -c %a \"$PWD\"; echo \"$PWD\"; echo \"$0\"; printf '%s\\n' \"$@\"; } > \"$out\"\n"
      + "echo 'fake nvcc: done'\n";

  @Test
  void oneArchitectureIsACubinAndSeveralAFatbinWithPtxOfTheNewest() {
    assertEquals(List.of("-cubin", "-arch=sm_80"), NvccCompiler.targetFlags(List.of("sm_80")));
    assertEquals(List.of("-fatbin", "-gencode", "arch=compute_80,code=sm_80", "-gencode", "arch=compute_90,code=sm_90",
        "-gencode", "arch=compute_90,code=compute_90"), NvccCompiler.targetFlags(List.of("sm_80", "sm_90")));
  }

  @Test
  void theCommandIsAnArgumentListWithTheOptionsSplitAsAShellWouldNot() {
    NvccCompiler nvcc = new NvccCompiler(Path.of("/opt/cuda/bin/nvcc"), "V12.4.131", null);
    List<String> cmd = nvcc.command(List.of("sm_90"), "-O3  \"-DGREETING=hello world\" $(reboot);",
        Path.of("/d/kernel.cu"), Path.of("/d/kernel.cubin"));
    assertEquals(List.of("/opt/cuda/bin/nvcc", "-cubin", "-arch=sm_90", "-O3", "-DGREETING=hello world", "$(reboot);",
        "-o", "/d/kernel.cubin", "/d/kernel.cu"), cmd);
  }

  @Test
  void nvccRunsWithoutAShellInAPrivateDirectoryThatIsRemovedAfterwards() throws IOException {
    NvccCompiler nvcc = NvccCompiler.probe(fakeNvcc(REPORT));
    Path injected = tmp.resolve("injected");
    CudaCompiler.Output out = nvcc.compile(SOURCE.withOptions("\"-DX=$(touch " + injected + ")\" -O3"),
        List.of("sm_80", "sm_90"));
    List<String> report = List.of(new String(out.binary(), StandardCharsets.UTF_8).split("\n"));
    assertEquals("700", report.get(0), "the directory is private");
    Path dir = Path.of(report.get(1));
    assertTrue(dir.getFileName().toString().startsWith("mpi-build-nvcc"), dir.toString());
    assertEquals(List.of(tmp.resolve("nvcc").toString(), "-fatbin", "-gencode", "arch=compute_80,code=sm_80", "-gencode",
        "arch=compute_90,code=sm_90", "-gencode", "arch=compute_90,code=compute_90", "-DX=$(touch " + injected + ")",
        "-O3", "-o", dir.resolve("kernel.fatbin").toString(), dir.resolve("kernel.cu").toString()),
        report.subList(2, report.size()));
    assertFalse(Files.exists(injected), "no shell ran the options");
    assertFalse(Files.exists(dir), "the directory is removed");
    assertEquals("fake nvcc: done\n", out.log());
  }

  @Test
  void anUnknownOptionNamesTheRequestsOptions() throws IOException {
    NvccCompiler nvcc = NvccCompiler.probe(fakeNvcc("echo \"nvcc fatal   : Unknown option '--bogus'\"; exit 1\n"));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> nvcc.compile(SOURCE.withOptions("-O3 --bogus"), List.of("sm_80")));
    assertEquals("invalid build options '-O3 --bogus': Unknown option '--bogus'", e.getMessage());
  }

  @Test
  void aCompileErrorCarriesNvccsOutput() throws IOException {
    NvccCompiler nvcc = NvccCompiler.probe(fakeNvcc("echo 'kernel.cu(1): error: identifier \"y\" is undefined'; exit 2\n"));
    CompileException e = assertThrows(CompileException.class, () -> nvcc.compile(SOURCE, List.of("sm_80")));
    assertTrue(e.getMessage().startsWith("nvcc failed with exit status 2"), e.getMessage());
    assertEquals("kernel.cu(1): error: identifier \"y\" is undefined\n", e.buildLog());
  }

  @Test
  void theProbeReadsTheVersionOrSaysWhyNvccCannotRun() throws IOException {
    NvccCompiler found = NvccCompiler.probe(fakeNvcc(REPORT));
    assertNull(found.problem());
    assertTrue(found.identity("sm_80").startsWith("nvcc " + tmp.resolve("nvcc") + " V12.4.131 flags="),
        found.identity("sm_80"));
    assertEquals("nvcc not found on the PATH, in CUDA_HOME or /usr/local/cuda (set MPI_BUILD_NVCC)",
        NvccCompiler.probe(null).problem());
    Path absent = tmp.resolve("no-such-nvcc");
    String problem = NvccCompiler.probe(absent).problem();
    assertTrue(problem.startsWith("cannot run " + absent + ": "), problem);
    Path broken = tmp.resolve("broken-nvcc");
    Files.writeString(broken, "#!/bin/sh\necho 'libcudart missing'\nexit 3\n");
    Files.setPosixFilePermissions(broken, PosixFilePermissions.fromString("rwx------"));
    assertEquals("cannot run " + broken + ": nvcc --version failed: libcudart missing",
        NvccCompiler.probe(broken).problem());
  }
}

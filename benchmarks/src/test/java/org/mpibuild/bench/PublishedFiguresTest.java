package org.mpibuild.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The figures the README and docs/scale.md show are exactly those the code makes from the published run. */
class PublishedFiguresTest {
  static final Path REPO = Path.of("..");

  @Test
  void theBenchmarkPagesTablesComeFromDocsBenchResultsJson() throws Exception {
    String page = Files.readString(REPO.resolve(Publish.PAGE));
    String json = Files.readString(REPO.resolve("docs/bench-results.json"));
    assertEquals(Publish.tables(json), Publish.between(page, Publish.BEGIN, Publish.END),
        Publish.PAGE + "'s benchmark tables differ from docs/bench-results.json: run make bench, then make bench-publish");
  }

  @Test
  void theReadmesBenchLineComesFromDocsBenchResultsJson() throws Exception {
    String readme = Files.readString(REPO.resolve("README.md"));
    String json = Files.readString(REPO.resolve("docs/bench-results.json"));
    assertEquals(Publish.line(json), Publish.between(readme, Publish.LINE_BEGIN, Publish.LINE_END),
        "README.md's bench: line differs from docs/bench-results.json: run make bench, then make bench-publish");
  }

  @Test
  void theScaleModelsTableIsTheModels() throws Exception {
    String page = Files.readString(REPO.resolve("docs/scale.md"));
    assertEquals(ScaleModel.table(ScaleModel.STATED), Publish.between(page, ScaleModel.BEGIN, ScaleModel.END),
        "docs/scale.md's table differs from the model: run make scale-model");
  }

  @Test
  void replacingBetweenMarkersKeepsTheRest() {
    String t = "a\n<!-- x -->\nold\n<!-- y -->\nb\n";
    String r = Publish.replaceBetween(t, "<!-- x -->", "<!-- y -->", "new\n");
    assertEquals("a\n<!-- x -->\nnew\n<!-- y -->\nb\n", r);
    assertEquals("new\n", Publish.between(r, "<!-- x -->", "<!-- y -->"));
  }
}

package org.mpibuild.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.mpibuild.Configuration;
import org.mpibuild.spi.Setting;
import org.mpibuild.spi.SettingSource;

/** What doctor says of names that look like settings and are none. */
class DoctorSettingsTest {
  static String configuration(Properties props, Map<String, String> env) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    DoctorCommand d = new DoctorCommand(SettingSource.of(props, env));
    d.out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
    d.configuration();
    return bytes.toString(StandardCharsets.UTF_8);
  }

  @Test
  void aMisspeltVariableIsReportedWithTheNearestSetting() {
    String out = configuration(new Properties(), Map.of("MPI_BUILD_COLECTIVE_TIMEOUT", "3", "MPI_BUILD_HOME", "/opt"));
    assertTrue(out.contains("warn  environment variable MPI_BUILD_COLECTIVE_TIMEOUT is not a setting of mpi-build, "
        + "so it is ignored; did you mean MPI_BUILD_COLLECTIVE_TIMEOUT?"), out);
    assertTrue(!out.contains("MPI_BUILD_HOME"), "a launch-script variable is no misspelling: " + out);
  }

  /** Every real setting (the core's and the plug-ins' on this class path) and the launch scripts' names pass. */
  @Test
  void noRealSettingIsReported() {
    Map<String, String> env = new HashMap<>();
    Properties props = new Properties();
    for (Setting<?> s : Configuration.all()) {
      env.put(s.variable(), "");
      if (s.property() != null) {
        props.setProperty(s.property(), "");
      }
    }
    for (String launcherOnly : List.of("MPI_BUILD_HOME", "MPI_BUILD_JAVA_OPTS", "MPI_BUILD_MPIRUN",
        "MPI_BUILD_POCL_CACHE_ROOT", "MPI_BUILD_PROVISION_JDK")) {
      env.put(launcherOnly, "x");
    }
    props.setProperty("mpibuild.it.classpath", "x");
    assertEquals(List.of(), Configuration.misspelt(SettingSource.of(props, env)));
  }
}

package org.mpibuild.ffm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mpibuild.ffm.Libraries.Abi;
import org.mpibuild.ffm.Libraries.Candidate;
import org.mpibuild.ffm.Libraries.Implementation;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Communicator.Datatype;
import org.mpibuild.spi.Communicator.ReduceOp;

/** Which MPI libraries the FFM binding tries, in which order, and which it refuses: no MPI needed. */
class LibrariesTest {
  static final Map<String, String> OPEN_MPI = Map.of("OMPI_COMM_WORLD_SIZE", "2");
  static final Map<String, String> HYDRA = Map.of("PMI_RANK", "0");

  /** A library directory as Debian sid lays it out: both standard-ABI libraries, links, one dangling. */
  static Path sid(Path dir) throws Exception {
    Files.createFile(dir.resolve("libmpi_abi_openmpi.so.1.0.0"));
    Files.createFile(dir.resolve("libmpi_abi_mpich.so.1.0.0"));
    Files.createSymbolicLink(dir.resolve("libmpi_abi_mpich.so.1"), Path.of("libmpi_abi_mpich.so.1.0.0"));
    Files.createSymbolicLink(dir.resolve("libmpi_abi.so.1"), Path.of("libmpi_abi_openmpi.so.1.0.0"));
    Files.createSymbolicLink(dir.resolve("libmpi_abi_mpich.so"), Path.of("gone.so.1"));
    return dir;
  }

  static List<String> names(List<Candidate> cs) {
    return cs.stream().map(c -> Path.of(c.library()).getFileName() + (c.standard() ? "" : " (tables)")).toList();
  }

  @Test
  void underOpenMpisLauncherItsStandardLibraryComesFirstThenTheSharedNameThenItsOwn(@TempDir Path dir) throws Exception {
    List<Candidate> cs = Libraries.candidates(Abi.AUTO, OPEN_MPI, List.of(sid(dir)));
    assertEquals(List.of("libmpi_abi_openmpi.so.1.0.0", "libmpi_abi.so.1", "libmpi.so.40 (tables)",
        "libmpi_abi_mpich.so.1", "libmpich.so.12 (tables)"), names(cs));
    assertEquals(dir.resolve("libmpi_abi_openmpi.so.1.0.0").toString(), cs.get(0).library(), "by full path");
  }

  @Test
  void underHydraMpichsComeFirstAndOneFileIsTriedOnceWhateverItsLinks(@TempDir Path dir) throws Exception {
    List<Candidate> cs = Libraries.candidates(Abi.AUTO, HYDRA, List.of(sid(dir), dir));
    assertEquals(List.of("libmpi_abi_mpich.so.1", "libmpi_abi.so.1", "libmpich.so.12 (tables)",
        "libmpi_abi_openmpi.so.1.0.0", "libmpi.so.40 (tables)"), names(cs));
  }

  @Test
  void theAbiSettingNarrowsTheCandidates(@TempDir Path dir) throws Exception {
    sid(dir);
    assertEquals(List.of("libmpi.so.40 (tables)", "libmpich.so.12 (tables)"),
        names(Libraries.candidates(Abi.IMPLEMENTATION, OPEN_MPI, List.of(dir))));
    assertEquals(List.of("libmpi_abi_openmpi.so.1.0.0", "libmpi_abi.so.1", "libmpi_abi_mpich.so.1"),
        names(Libraries.candidates(Abi.STANDARD, OPEN_MPI, List.of(dir))));
  }

  @Test
  void withoutStandardLibrariesTheTablesAreTriedAsBefore(@TempDir Path dir) {
    assertEquals(List.of("libmpi_abi.so.1", "libmpi.so.40 (tables)", "libmpich.so.12 (tables)"),
        names(Libraries.candidates(Abi.AUTO, Map.of(), List.of(dir, dir.resolve("missing")))));
  }

  @Test
  void aLibraryIsRefusedForTheWrongAbiOrTheWrongImplementation() {
    Candidate std = new Candidate("/x/libmpi_abi_mpich.so.1", true, Implementation.MPICH);
    Candidate own = new Candidate("libmpi.so.40", false, Implementation.OPEN_MPI);
    assertNull(Libraries.refusal(std, Abi.AUTO, true, "MPICH", Implementation.MPICH));
    assertNull(Libraries.refusal(own, Abi.AUTO, false, "Open MPI", null));
    assertTrue(Libraries.refusal(std, Abi.AUTO, true, "MPICH", Implementation.OPEN_MPI)
        .contains("Open MPI's launcher started this process"));
    assertTrue(Libraries.refusal(std, Abi.IMPLEMENTATION, true, "MPICH", null).contains("standard-ABI library"));
    assertTrue(Libraries.refusal(own, Abi.STANDARD, false, "Open MPI", null).contains("no MPI 5.0 standard ABI"));
    assertTrue(Libraries.refusal(std, Abi.AUTO, false, "MPICH", null).contains("does not report a standard ABI"));
  }

  @Test
  void theLauncherIsToldByItsVariables() {
    assertEquals(Implementation.OPEN_MPI, Libraries.launcher(OPEN_MPI));
    assertEquals(Implementation.MPICH, Libraries.launcher(Map.of("MPI_LOCALNRANKS", "2")));
    assertNull(Libraries.launcher(Map.of("PATH", "/usr/bin")));
  }

  @Test
  void theStandardTableIsTheStandardsAndThreadLevelsMapBothWays() {
    // mpi-abi-stubs' mpi.h (MPI_ABI_VERSION 1.0): the values the binding passes to a standard-ABI library.
    assertEquals(0x101, HandleTable.STANDARD.commWorld());
    assertEquals(0x247, HandleTable.STANDARD.byteType());
    assertEquals(0x209, HandleTable.STANDARD.intType());
    assertEquals(0x23, HandleTable.STANDARD.opMax());
    assertEquals(221, HandleTable.STANDARD.commTypeShared());
    assertEquals(4096, HandleTable.STANDARD.threadLevel(3));
    assertEquals(3, HandleTable.STANDARD.ordinalOf(4096));
    assertEquals(1, HandleTable.STANDARD.ordinalOf(1024));
    assertEquals(3, HandleTable.MPICH.ordinalOf(3));
    assertEquals(0, HandleTable.MPICH.ordinalOf(0));
  }

  @Test
  void theReductionsHandlesAreTheHeadersValues() {
    // mpi-abi-stubs' mpi.h (commit e5f65c7), the same in MPICH's src/binding/abi/mpi_abi.h.
    assertEquals(List.of(0x209L, 0x258L, 0x210L, 0x214L), handles(HandleTable.STANDARD));
    assertEquals(List.of(0x21L, 0x22L, 0x23L), ops(HandleTable.STANDARD));
    // MPICH 4.0.2's configure.ac (PAC_SET_MPI_TYPE) for x86-64, written out in MPICH 5's mpi.h.in.
    assertEquals(List.of(0x4c000405L, 0x4c00083aL, 0x4c00040aL, 0x4c00080bL), handles(HandleTable.MPICH));
    assertEquals(List.of(0x58000003L, 0x58000002L, 0x58000001L), ops(HandleTable.MPICH));
  }

  private static List<Long> handles(HandleTable t) {
    return java.util.Arrays.stream(Datatype.values()).map(t::datatype).toList();
  }

  private static List<Long> ops(HandleTable t) {
    return java.util.Arrays.stream(ReduceOp.values()).map(t::op).toList();
  }

  @Test
  void persistentCollectivesAreMpi4sThenTheMpixExtensionsThenNone() {
    MpiC.Persistent mpi4 = MpiC.Persistent.of(Set.of("MPI_Bcast_init", "MPI_Allreduce_init", "MPIX_Bcast_init",
        "MPIX_Allreduce_init")::contains, MpiC.Kind.OPEN_MPI);
    assertEquals("MPI_Bcast_init", mpi4.bcastInit());
    assertEquals("MPI_Allreduce_init", mpi4.allreduceInit());
    assertEquals("MPI_Bcast_init and MPI_Allreduce_init (MPI 4.0)", mpi4.description());
    // Debian 12's Open MPI 4.1.4: the pcollreq extension only.
    MpiC.Persistent pcollreq = MpiC.Persistent.of(Set.of("MPI_Bcast_init", "MPIX_Bcast_init",
        "MPIX_Allreduce_init")::contains, MpiC.Kind.OPEN_MPI);
    assertEquals("MPIX_Allreduce_init", pcollreq.allreduceInit());
    assertEquals("MPIX_Bcast_init and MPIX_Allreduce_init (Open MPI's pcollreq extension)", pcollreq.description());
    MpiC.Persistent none = MpiC.Persistent.of(Set.of("MPI_Ibcast", "MPIX_Bcast_init")::contains, MpiC.Kind.MPICH);
    assertFalse(none.available());
    assertNull(none.bcastInit());
    assertEquals(Communicator.NO_PERSISTENT_COLLECTIVES, none.description());
  }
}

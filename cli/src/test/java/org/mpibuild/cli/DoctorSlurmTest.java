package org.mpibuild.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** What doctor says of a Slurm job, from the variables Slurm sets (SlurmIT checks it inside a real job). */
class DoctorSlurmTest {
  @Test
  void outsideSlurmThereIsNothingToSay() {
    assertNull(DoctorCommand.slurm(Map.of("OMPI_COMM_WORLD_SIZE", "4")));
  }

  @Test
  void aTaskOfAnSrunStepThroughPmix() {
    assertEquals("Slurm's srun through PMIx, job 12 step 0, task 3 of 4, nodes c[1-2] (this is c2)",
        DoctorCommand.slurm(Map.of("SLURM_JOB_ID", "12", "SLURM_STEP_ID", "0", "SLURM_PROCID", "3",
            "SLURM_STEP_NUM_TASKS", "4", "SLURM_JOB_NODELIST", "c[1-2]", "SLURMD_NODENAME", "c2", "PMIX_RANK", "3")));
  }

  @Test
  void aBatchScriptHasNoStep() {
    assertEquals("Slurm batch script (no step: start ranks with srun or mpirun), job 7, nodes c1",
        DoctorCommand.slurm(Map.of("SLURM_JOB_ID", "7", "SLURM_JOB_NODELIST", "c1")));
  }
}

package org.mpibuild.internal.protocol;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import org.mpibuild.KernelSource;

/**
 * Who obtains which request of a batch, and in what order the binaries travel. Every rank computes the
 * same plan from the same requests, with no communication.
 *
 * <p>The compiles are balanced by expected cost (longest processing time first: the most expensive request
 * goes to the compiling rank with the least work so far), at most one per rank at a time. The expected
 * cost of a request is its source length plus a fixed start-up cost per compile. Cached requests cost less
 * than this estimate, which only makes the plan conservative. The compiling ranks are spread evenly over
 * the communicator, so that with ranks placed by node they fall on different nodes. The broadcasts go in
 * order of expected completion, so each owner's next compile overlaps the broadcasts before it.
 *
 * @param owners the owner of each request, a rank of the communicator
 * @param order the request indices in broadcast order
 */
record BatchPlan(int[] owners, int[] order) {
  /** The expected cost of starting one compile, in source characters. */
  static final long COMPILE_START_COST = 4096;

  static BatchPlan of(List<KernelSource> requests, int size, int maxCompilingRanks) {
    int k = requests.size();
    int n = maxCompilingRanks <= 0 ? size : Math.min(maxCompilingRanks, size);
    int[] compilers = new int[n];
    for (int j = 0; j < n; j++) {
      compilers[j] = (int) ((long) j * size / n);
    }
    long[] cost = new long[k];
    Integer[] byCost = new Integer[k];
    for (int i = 0; i < k; i++) {
      cost[i] = COMPILE_START_COST + requests.get(i).source().length();
      byCost[i] = i;
    }
    Arrays.sort(byCost, Comparator.<Integer>comparingLong(i -> -cost[i]).thenComparingInt(i -> i));
    long[] load = new long[n];
    int[] owners = new int[k];
    long[] finish = new long[k];
    for (int i : byCost) {
      int least = 0;
      for (int j = 1; j < n; j++) {
        if (load[j] < load[least]) {
          least = j;
        }
      }
      load[least] += cost[i];
      owners[i] = compilers[least];
      finish[i] = load[least];
    }
    List<Integer> order = new ArrayList<>();
    for (int i = 0; i < k; i++) {
      order.add(i);
    }
    order.sort(Comparator.<Integer>comparingLong(i -> finish[i]).thenComparingInt(i -> i));
    return new BatchPlan(owners, order.stream().mapToInt(Integer::intValue).toArray());
  }

  /** "request 3 of 32 (kernels [saxpy])": a request of a batch, for messages; "" when it is the only one. */
  static String describeRequest(int i, int k, KernelSource request) {
    return k == 1 ? "" : "request " + i + " of " + k + " (kernels " + request.kernelNames() + ")";
  }
}

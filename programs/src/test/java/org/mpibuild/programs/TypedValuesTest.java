package org.mpibuild.programs;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;
import org.mpibuild.spi.Communicator.Datatype;

class TypedValuesTest {
  @Test
  void everyTypeReadsBackWhatWasWrittenAtItsOwnWidth() {
    for (Datatype type : Datatype.values()) {
      ByteBuffer b = TypedValues.of(type, 5, i -> -3 * i + 0.5 * (i % 2));
      assertEquals(5 * type.bytes(), b.capacity(), type.toString());
      assertEquals(ByteOrder.nativeOrder(), b.order(), type.toString());
      for (int i = 0; i < 5; i++) {
        double written = -3 * i + 0.5 * (i % 2);
        double expected = switch (type) {
          case INT -> (int) written;
          case LONG -> (long) written;
          case FLOAT -> (float) written;
          case DOUBLE -> written;
        };
        assertEquals(expected, TypedValues.at(b, type, i), type + " value " + i);
      }
    }
  }

  @Test
  void valuesAreLaidOutAsTheDevicesReadThem() {
    ByteBuffer ints = TypedValues.of(Datatype.INT, 3, i -> i + 7);
    assertEquals(8, ints.getInt(4));
    ByteBuffer doubles = TypedValues.of(Datatype.DOUBLE, 2, i -> i - 0.25);
    assertEquals(0.75, doubles.getDouble(8));
  }
}

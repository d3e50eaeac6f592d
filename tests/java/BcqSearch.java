import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Paths;
import org.apache.rocketmq.common.BoundaryType;
import org.apache.rocketmq.store.queue.BatchConsumeQueue;

/** RocketMQ's own BatchConsumeQueue searches over the written units of BatchConsumeQueue files. For each stdin line
 *  "FILE UNITS TARGET": binarySearchRight on storeTime, printing "LOWER UPPER", the unit index each boundary
 *  stops at (-1: none). For "base FILE UNITS TARGET": binarySearch on msgBaseOffset (getBatchMsgIndexBuffer's),
 *  printing the unit index it returns (-1: none); it reads no state of the queue, so it runs on an instance
 *  made without a constructor. */
public class BcqSearch {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        int unit = BatchConsumeQueue.CQ_STORE_UNIT_SIZE;
        Method byBase = BatchConsumeQueue.class.getDeclaredMethod(
            "binarySearch", ByteBuffer.class, int.class, int.class, int.class, int.class, long.class);
        byBase.setAccessible(true);
        Field unsafeField = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
        unsafeField.setAccessible(true);
        Object queue = ((sun.misc.Unsafe) unsafeField.get(null)).allocateInstance(BatchConsumeQueue.class);
        for (String line; (line = in.readLine()) != null; ) {
            String[] f = line.trim().split(" ");
            boolean base = f[0].equals("base");
            int at = base ? 1 : 0;
            ByteBuffer buf = ByteBuffer.wrap(Files.readAllBytes(Paths.get(f[at])));
            int right = (Integer.parseInt(f[at + 1]) - 1) * unit;
            long target = Long.parseLong(f[at + 2]);
            if (base) {
                int mid = (int) byBase.invoke(queue, buf, 0, right, unit, BatchConsumeQueue.MSG_BASE_OFFSET_INDEX, target);
                System.out.println(mid < 0 ? -1 : mid / unit);
                continue;
            }
            int lower = BatchConsumeQueue.binarySearchRight(buf, 0, right, unit,
                BatchConsumeQueue.MSG_STORE_TIME_OFFSET_INDEX, target, BoundaryType.LOWER);
            int upper = BatchConsumeQueue.binarySearchRight(buf, 0, right, unit,
                BatchConsumeQueue.MSG_STORE_TIME_OFFSET_INDEX, target, BoundaryType.UPPER);
            System.out.println((lower < 0 ? -1 : lower / unit) + " " + (upper < 0 ? -1 : upper / unit));
        }
    }
}

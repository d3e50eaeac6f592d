import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Paths;
import org.apache.rocketmq.common.BoundaryType;
import org.apache.rocketmq.store.queue.BatchConsumeQueue;

/** RocketMQ's own BatchConsumeQueue.binarySearchRight over the written units of BatchConsumeQueue files: for each
 *  stdin line "FILE UNITS TARGET", prints "LOWER UPPER", the unit index each boundary stops at (-1: none). */
public class BcqSearch {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        int unit = BatchConsumeQueue.CQ_STORE_UNIT_SIZE;
        for (String line; (line = in.readLine()) != null; ) {
            String[] f = line.trim().split(" ");
            ByteBuffer buf = ByteBuffer.wrap(Files.readAllBytes(Paths.get(f[0])));
            int right = (Integer.parseInt(f[1]) - 1) * unit;
            long target = Long.parseLong(f[2]);
            int lower = BatchConsumeQueue.binarySearchRight(buf, 0, right, unit,
                BatchConsumeQueue.MSG_STORE_TIME_OFFSET_INDEX, target, BoundaryType.LOWER);
            int upper = BatchConsumeQueue.binarySearchRight(buf, 0, right, unit,
                BatchConsumeQueue.MSG_STORE_TIME_OFFSET_INDEX, target, BoundaryType.UPPER);
            System.out.println((lower < 0 ? -1 : lower / unit) + " " + (upper < 0 ? -1 : upper / unit));
        }
    }
}

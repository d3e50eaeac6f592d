import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.serializer.SerializerFeature;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/** Each file named on the command line as ConsumerOffsetManager's decode reads it (RemotingSerializable.fromJson:
 * fastjson 1.2.83's typed JSON.parseObject, default features, into the manager's offsetTable): one line per file,
 * "OK " and the offsetTable as JSON (queue ids as strings), or "FAIL". */
public class FastjsonParse {
    public static class Offsets {
        private ConcurrentMap<String, ConcurrentMap<Integer, Long>> offsetTable = new ConcurrentHashMap<>();

        public ConcurrentMap<String, ConcurrentMap<Integer, Long>> getOffsetTable() {
            return offsetTable;
        }

        public void setOffsetTable(ConcurrentMap<String, ConcurrentMap<Integer, Long>> offsetTable) {
            this.offsetTable = offsetTable;
        }
    }

    public static void main(String[] args) throws Exception {
        for (String file : args) {
            String text = new String(Files.readAllBytes(Paths.get(file)), StandardCharsets.UTF_8);
            try {
                Offsets decoded = JSON.parseObject(text, Offsets.class);
                System.out.println(
                    "OK " + JSON.toJSONString(decoded.getOffsetTable(), SerializerFeature.WriteNonStringKeyAsString));
            } catch (RuntimeException e) {
                System.out.println("FAIL");
            }
        }
    }
}

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.serializer.SerializerFeature;
import java.io.File;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import org.apache.rocketmq.common.ConfigManager;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.remoting.protocol.RemotingSerializable;

/** Each directory named on the command line holds a consumerOffset.json and/or its .bak: RocketMQ's own
 * ConfigManager.load (from the oracle's jar: MixAll.file2String, then the .bak where the file is empty, absent or
 * does not decode) with ConsumerOffsetManager's decode (RemotingSerializable.fromJson into its offsetTable's
 * type). One line per directory: "main " or "bak " and the offsetTable as JSON (queue ids as strings; "null" when
 * the decode kept nothing), "none" when nothing was decoded, "FAIL" when load() returns false. */
public class ConfigLoad {
    public static class Offsets extends RemotingSerializable {
        private ConcurrentMap<String, ConcurrentMap<Integer, Long>> offsetTable = new ConcurrentHashMap<>();

        public ConcurrentMap<String, ConcurrentMap<Integer, Long>> getOffsetTable() {
            return offsetTable;
        }

        public void setOffsetTable(ConcurrentMap<String, ConcurrentMap<Integer, Long>> offsetTable) {
            this.offsetTable = offsetTable;
        }
    }

    static class Manager extends ConfigManager {
        final String path;
        String decodedFrom = "none";
        Object table;

        Manager(String path) {
            this.path = path;
        }

        @Override
        public String configFilePath() {
            return path;
        }

        @Override
        public void decode(String jsonString) {
            Offsets decoded = RemotingSerializable.fromJson(jsonString, Offsets.class);
            try {
                decodedFrom = jsonString.equals(MixAll.file2String(path)) ? "main" : "bak";
            } catch (java.io.IOException e) {
                throw new RuntimeException(e);
            }
            table = decoded == null ? null : decoded.getOffsetTable();
        }

        @Override
        public String encode() {
            return null;
        }

        @Override
        public String encode(boolean prettyFormat) {
            return null;
        }
    }

    public static void main(String[] args) {
        for (String dir : args) {
            Manager m = new Manager(new File(dir, "consumerOffset.json").getPath());
            if (!m.load()) {
                System.out.println("FAIL");
            } else if (m.decodedFrom.equals("none")) {
                System.out.println("none");
            } else {
                System.out.println(
                    m.decodedFrom + " " + JSON.toJSONString(m.table, SerializerFeature.WriteNonStringKeyAsString));
            }
        }
    }
}

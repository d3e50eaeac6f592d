import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.serializer.SerializerFeature;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.config.ConfigHelper;
import org.apache.rocketmq.remoting.protocol.DataVersion;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.DBOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksIterator;

/** A config database of one kind opened as RocketMQ 5.3.3's ConfigRocksDBStorage opens it read-only (its DBOptions
 *  and column family options from ConfigHelper; the families default, kvDataVersion, forbidden) through rocksdbjni,
 *  the DataVersion decoded into RocketMQ's DataVersion and each value as its manager decodes it (fastjson 1.2.83:
 *  offsets into a RocksDBOffsetSerializeWrapper's map of Integer to Long, topics into RocketMQ's TopicConfig).
 *  Usage: ConfigDbRead DB offsets|topics|groups. Prints "#version COUNTER", then "KEY<TAB>JSON" per entry. */
public class ConfigDbRead {
    /** RocksDBOffsetSerializeWrapper's shape (a broker class, not in the oracle's jars). */
    public static class OffsetWrapper {
        private ConcurrentMap<Integer, Long> offsetTable = new ConcurrentHashMap<>(16);
        public ConcurrentMap<Integer, Long> getOffsetTable() { return offsetTable; }
        public void setOffsetTable(ConcurrentMap<Integer, Long> t) { this.offsetTable = t; }
    }

    public static void main(String[] args) throws Exception {
        RocksDB.loadLibrary();
        DBOptions options = ConfigHelper.createConfigDBOptions();
        ColumnFamilyOptions cf = ConfigHelper.createConfigColumnFamilyOptions();
        List<ColumnFamilyDescriptor> families = Arrays.asList(
            new ColumnFamilyDescriptor(RocksDB.DEFAULT_COLUMN_FAMILY, cf),
            new ColumnFamilyDescriptor("kvDataVersion".getBytes(StandardCharsets.UTF_8), cf),
            new ColumnFamilyDescriptor("forbidden".getBytes(StandardCharsets.UTF_8), cf));
        List<ColumnFamilyHandle> handles = new ArrayList<>();
        try (RocksDB db = RocksDB.openReadOnly(options, args[0], families, handles)) {
            byte[] version = db.get(handles.get(1), "kvDataVersionKey".getBytes(StandardCharsets.UTF_8));
            DataVersion dv = version == null ? new DataVersion()
                : JSON.parseObject(new String(version, StandardCharsets.UTF_8), DataVersion.class);
            System.out.println("#version " + dv.getCounter().get());
            try (RocksIterator it = db.newIterator(handles.get(0))) {
                for (it.seekToFirst(); it.isValid(); it.next()) {
                    String key = new String(it.key(), StandardCharsets.UTF_8);
                    Object value = decode(args[1], it.value());
                    System.out.println(key + "\t" + JSON.toJSONString(value, SerializerFeature.WriteNonStringKeyAsString));
                }
                it.status();
            }
        }
    }

    static Object decode(String kind, byte[] body) {
        switch (kind) {
            case "offsets": return ((OffsetWrapper) JSON.parseObject(body, OffsetWrapper.class)).getOffsetTable();
            case "topics": return JSON.parseObject(body, TopicConfig.class);
            default: return JSON.parseObject(new String(body, StandardCharsets.UTF_8));
        }
    }
}

import java.lang.reflect.Method;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.common.BoundaryType;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.config.MessageStoreConfig;

/** RocketMQ 5.3.3's DefaultMessageStore over a copy of a store (STORE CONF TOPIC QUEUE_ID TIME...): load(), the
 *  broker's topics from its config (the oracle's OracleStore5, as read5.sh), then getOffsetInQueueByTime of each
 *  TIME: one line "TIME LOWER UPPER" each. The copy must not be the fixture: load() may write. */
public class BcqByTime {
    public static void main(String[] args) throws Exception {
        Path root = Paths.get(args[0]).toAbsolutePath();
        Properties props = MixAll.string2Properties(MixAll.file2String(args[1]));
        BrokerConfig broker = new BrokerConfig();
        MessageStoreConfig config = new MessageStoreConfig();
        MixAll.properties2Object(props, broker);
        MixAll.properties2Object(props, config);
        config.setStorePathRootDir(root.toString());
        config.setStorePathCommitLog(root.resolve("commitlog").toString());
        Class<?> oracle = Class.forName("org.apache.rocketmq.store.OracleStore5");
        Method topics = oracle.getDeclaredMethod("loadTopicConfigs", Path.class, Map.class);
        Method make = oracle.getDeclaredMethod(
            "newStore", MessageStoreConfig.class, BrokerConfig.class, ConcurrentHashMap.class, Map.class);
        topics.setAccessible(true);
        make.setAccessible(true);
        Object table = topics.invoke(null, root, new TreeMap<String, Object>());
        DefaultMessageStore store = (DefaultMessageStore) make.invoke(null, config, broker, table, new TreeMap<String, Object>());
        if (!store.load()) {
            throw new IllegalStateException("load() returned false");
        }
        String topic = args[2];
        int queueId = Integer.parseInt(args[3]);
        for (int i = 4; i < args.length; i++) {
            long time = Long.parseLong(args[i]);
            System.out.println(time + " " + store.getOffsetInQueueByTime(topic, queueId, time, BoundaryType.LOWER) + " "
                + store.getOffsetInQueueByTime(topic, queueId, time, BoundaryType.UPPER));
        }
        System.exit(0);
    }
}

import java.io.*;
import java.util.*;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.timer.*;

/**
 * TimerRecover5 STORE CONF: RocketMQ 5.3.3's DefaultMessageStore.load, then TimerMessageStore.load (its recover),
 * on STORE (a copy: the load writes to it). Prints where the timer enqueue resumes ("queueOffset N"), where the
 * timerlog was truncated ("processOffset N") and every slot of the wheel after the recovery's revisions that holds
 * a time in its own place ("slot INDEX TIME_DIV_PRECISION FIRST_POS LAST_POS NUM").
 */
public class TimerRecover5 {
    public static void main(String[] args) throws Exception {
        String root = new File(args[0]).getAbsolutePath();
        Properties p = new Properties();
        try (InputStream in = new FileInputStream(args[1])) {
            p.load(in);
        }
        BrokerConfig brokerConfig = new BrokerConfig();
        MessageStoreConfig config = new MessageStoreConfig();
        MixAll.properties2Object(p, brokerConfig);
        MixAll.properties2Object(p, config);
        config.setStorePathRootDir(root);
        config.setStorePathCommitLog(root + "/commitlog");
        DefaultMessageStore store = new DefaultMessageStore(config, null, null, brokerConfig, new ConcurrentHashMap<String, TopicConfig>());
        if (!store.load()) throw new IllegalStateException("DefaultMessageStore.load failed");
        TimerCheckpoint checkpoint = new TimerCheckpoint(root + "/config/timercheck");
        TimerMessageStore timer = new TimerMessageStore(store, config, checkpoint, new TimerMetrics(root + "/config/timermetrics"), null);
        store.setTimerMessageStore(timer);
        if (!timer.load()) throw new IllegalStateException("TimerMessageStore.load failed");
        System.out.println("queueOffset " + timer.getQueueOffset());
        System.out.println("processOffset " + timer.getTimerLog().getMappedFileQueue().getFlushedWhere());
        TimerWheel wheel = timer.getTimerWheel();
        int precision = config.getTimerPrecisionMs();
        for (long i = 0; i < 7 * 86400 * 2; i++) {
            Slot s = wheel.getRawSlot(i * precision);
            if (s.timeMs > 0 && wheel.getSlotIndex(s.timeMs) == i) {
                System.out.println("slot " + i + " " + s.timeMs / precision + " " + s.firstPos + " " + s.lastPos + " " + s.num);
            }
        }
        System.exit(0);
    }
}

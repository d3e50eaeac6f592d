import java.io.FileInputStream;
import java.io.InputStream;
import java.util.Properties;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.config.MessageStoreConfig;

/** RocketMQ 4.9.7's own schedule service on a store (changed in place: give it a copy). Args: STORE CONF SECONDS
 *  [OFFSET:SIZE ...]. After load(), prints for each OFFSET:SIZE what DefaultMessageStore.lookMessageByOffset returns
 *  ("probe OFFSET null", or "probe OFFSET TOPIC REAL_TOPIC REAL_QID"); then start()s the store (the schedule
 *  service delivers what is due), waits SECONDS, prints each record it wrote ("delivered TOPIC QUEUEID
 *  REAL_TOPIC"), the delay offset table ("offsets JSON") and shuts down. */
public class ScheduleDeliver4 {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        try (InputStream in = new FileInputStream(args[1])) {
            props.load(in);
        }
        BrokerConfig brokerConfig = new BrokerConfig();
        MessageStoreConfig msc = new MessageStoreConfig();
        MixAll.properties2Object(props, brokerConfig);
        MixAll.properties2Object(props, msc);
        msc.setStorePathRootDir(args[0]);
        msc.setStorePathCommitLog(args[0] + "/commitlog");
        msc.setHaListenPort(0); // any free port: another store on the machine must not collide on 10912
        DefaultMessageStore store = new DefaultMessageStore(msc, null, null, brokerConfig);
        if (!store.load()) throw new IllegalStateException("load() returned false");
        for (int i = 3; i < args.length; i++) {
            String[] probe = args[i].split(":");
            MessageExt m = store.lookMessageByOffset(Long.parseLong(probe[0]), Integer.parseInt(probe[1]));
            System.out.println("probe " + probe[0] + " " + (m == null ? "null" : m.getTopic() + " "
                + m.getProperty(MessageConst.PROPERTY_REAL_TOPIC) + " " + m.getProperty(MessageConst.PROPERTY_REAL_QUEUE_ID)));
        }
        long before = store.getMaxPhyOffset();
        store.start();
        Thread.sleep(Long.parseLong(args[2]) * 1000);
        for (long at = before; at < store.getMaxPhyOffset(); ) {
            MessageExt m = store.lookMessageByOffset(at);
            System.out.println("delivered " + m.getTopic() + " " + m.getQueueId() + " "
                + m.getProperty(MessageConst.PROPERTY_REAL_TOPIC));
            at += m.getStoreSize();
        }
        System.out.println("offsets " + store.getScheduleMessageService().encode());
        store.shutdown();
    }
}

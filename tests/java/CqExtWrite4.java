import java.io.File;
import java.io.FileInputStream;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Properties;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.store.ConsumeQueue;
import org.apache.rocketmq.store.ConsumeQueueExt;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.MessageExtBrokerInner;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.PutMessageStatus;
import org.apache.rocketmq.store.SelectMappedBufferResult;
import org.apache.rocketmq.store.config.MessageStoreConfig;

/**
 * A store with ConsumeQueueExt (enableConsumeQueueExt=true) written by RocketMQ 4.9.7's own code.
 * Usage: CqExtWrite4 STORE_ROOT CONF MESSAGES [--read]
 *
 * CONF (a broker.conf: its keys go into MessageStoreConfig as BrokerStartup puts them) says the geometry and
 * enableConsumeQueueExt. Without --read, STORE_ROOT (empty) gets MESSAGES puts over ExtTopicA (2 queues) and
 * ExtTopicB (1 queue), tags on most (some without TAGS, one an empty TAGS value), each waited for until the reput
 * has dispatched it, so every consume queue unit's tagsCode is the address of its ConsumeQueueExt unit; then a
 * clean shutdown. With --read nothing is put: STORE_ROOT (one this harness wrote, then changed) is only loaded.
 * Either way it prints, for every unit the store's consume queues hold after load (or after the puts), one line
 * "unit TOPIC QUEUEID QUEUEOFFSET PHYOFFSET SIZE TAGSCODE EXT" where EXT is what ConsumeQueue.getExt(TAGSCODE)
 * returns: "none" (null), "TAGSCODE:MSGSTORETIME:BITMAPSIZE" of the ext unit or "throws" (a RuntimeException), then
 * "loaded true|false".
 */
public class CqExtWrite4 {
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
        msc.setStorePathCommitLog(args[0] + File.separator + "commitlog");
        msc.setHaListenPort(0); // any free port: another store on the machine must not collide on 10912
        boolean reread = args.length > 3 && args[3].equals("--read");
        DefaultMessageStore store = new DefaultMessageStore(msc, null, null, brokerConfig);
        boolean loaded = store.load();
        if (!loaded) {
            System.out.println("loaded false");
            return;
        }
        store.start();
        if (!reread) {
            int messages = Integer.parseInt(args[2]);
            for (int i = 0; i < messages; i++) {
                MessageExtBrokerInner m = new MessageExtBrokerInner();
                m.setTopic(i % 3 == 2 ? "ExtTopicB" : "ExtTopicA");
                m.setQueueId(i % 3 == 2 ? 0 : i % 2);
                m.setBody(("ext body " + i).getBytes(StandardCharsets.UTF_8));
                String tags = i % 5 == 4 ? null : i == 7 ? "" : "Tag" + (i % 4);
                if (tags != null) {
                    MessageAccessor.putProperty(m, MessageConst.PROPERTY_TAGS, tags);
                }
                MessageAccessor.putProperty(m, MessageConst.PROPERTY_KEYS, "k" + i);
                m.setPropertiesString(MessageDecoder.messageProperties2String(m.getProperties()));
                m.setTagsCode(MessageExtBrokerInner.tagsString2tagsCode(tags));
                m.setBornTimestamp(1_700_000_000_000L + i);
                m.setBornHost(new InetSocketAddress("127.0.0.1", 40000));
                m.setStoreHost(new InetSocketAddress("127.0.0.1", 10911));
                PutMessageResult r = store.putMessage(m);
                if (r.getPutMessageStatus() != PutMessageStatus.PUT_OK) {
                    throw new IllegalStateException("put " + i + ": " + r);
                }
                while (store.dispatchBehindBytes() > 0) {
                    Thread.sleep(1);
                }
            }
        }
        for (String topic : new String[] {"ExtTopicA", "ExtTopicB"}) {
            for (int q = 0; q < 2; q++) {
                ConsumeQueue cq = store.getConsumeQueueTable().containsKey(topic)
                    ? store.getConsumeQueueTable().get(topic).get(q) : null;
                if (cq == null) {
                    continue;
                }
                for (long i = cq.getMinOffsetInQueue(); i < cq.getMaxOffsetInQueue(); i++) {
                    SelectMappedBufferResult r = cq.getIndexBuffer(i);
                    if (r == null) {
                        continue;
                    }
                    ByteBuffer b = r.getByteBuffer();
                    long phy = b.getLong();
                    int size = b.getInt();
                    long tagsCode = b.getLong();
                    r.release();
                    String read;
                    try {
                        ConsumeQueueExt.CqExtUnit ext = cq.getExt(tagsCode);
                        read = ext == null ? "none" : ext.getTagsCode() + ":" + ext.getMsgStoreTime() + ":"
                            + (ext.getFilterBitMap() == null ? 0 : ext.getFilterBitMap().length);
                    } catch (RuntimeException e) { // a unit running past the buffer: getMessage's pull fails so
                        read = "throws";
                    }
                    System.out.println("unit " + topic + " " + q + " " + i + " " + phy + " " + size + " " + tagsCode
                        + " " + read);
                }
            }
        }
        System.out.println("loaded true");
        store.shutdown();
    }
}

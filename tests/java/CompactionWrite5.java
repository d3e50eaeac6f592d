import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.serializer.SerializerFeature;
import java.io.File;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.remoting.protocol.body.TopicConfigSerializeWrapper;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.GetMessageResult;
import org.apache.rocketmq.store.GetMessageStatus;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.PutMessageStatus;
import org.apache.rocketmq.store.config.FlushDiskType;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.kv.CompactionLog;
import org.apache.rocketmq.store.kv.CompactionStore;
import org.apache.rocketmq.store.logfile.MappedFile;
import org.apache.rocketmq.store.queue.CqUnit;
import org.apache.rocketmq.store.queue.ReferredIterator;
import org.apache.rocketmq.store.queue.SparseConsumeQueue;

/**
 * A compaction topic written and compacted by RocketMQ 5.3.3's own code.
 * Usage: CompactionWrite5 STORE_ROOT TRUTH_JSON [--read]
 *
 * STORE_ROOT (empty) becomes a DefaultMessageStore whose topic table marks CompactTopic (2 queues) with
 * cleanup.policy=COMPACTION, as a broker's TopicConfigManager hands it over (also written to config/topics.json the
 * way TopicConfigManager.encode does); PlainTopic is an ordinary topic. enableCompaction is MessageStoreConfig's
 * default (true), so the store's own CommitLogDispatcherCompaction -> CompactionService -> CompactionStore copies
 * every keyed CompactTopic record into compaction/compactionLog and compactionCq while the reput dispatches.
 * Two rounds of puts, each followed by CompactionLog.doCompaction() on every queue (what CompactionStore's
 * scheduler calls every compactionScheduleInternal; called here once dispatch is done, so the run is the same
 * every time), which writes compaction/position-checkpoint. Keys repeat, some messages have no key (never copied),
 * some an empty body (a tombstone: compaction drops it and the older values of its key).
 *
 * TRUTH_JSON: per queue what DefaultMessageStore.getMessage serves for CompactTopic (it routes a COMPACTION topic
 * to CompactionStore.getMessage over the compaction CQ), each message decoded by MessageDecoder; the units the
 * SparseConsumeQueue iterates (iterateFromOrNext, as getMessage walks it); its min/max offset; the log and CQ files;
 * whether each served body still matches its BODYCRC (UtilAll.crc32, as CommitLog.checkMessageAndReturnSize);
 * CompactionPositionMgr's offsets; and the geometry (compactionLog / compactionCq file sizes) the store used.
 *
 * --read: no puts and no compaction; STORE_ROOT (one this harness wrote, then changed) is opened as a broker
 * reopens it (load, whose CompactionStore.load loads every compaction queue, then start) and TRUTH_JSON says what it
 * serves; a queue whose CompactionLog did not load (CompactionStore.loadAndGetClog drops it on an IOException)
 * is {"queueId": N, "loaded": false}; a store whose load() returns false (a broker would not start) is only
 * {"loadReturned": false}.
 */
public class CompactionWrite5 {
    static final String TOPIC = "CompactTopic", PLAIN = "PlainTopic";
    static final int QUEUES = 2;

    public static void main(String[] args) throws Exception {
        File root = new File(args[0]);
        boolean reread = args.length > 2 && args[2].equals("--read");
        MessageStoreConfig msc = new MessageStoreConfig();
        msc.setStorePathRootDir(root.getPath());
        msc.setStorePathCommitLog(new File(root, "commitlog").getPath());
        msc.setMappedFileSizeCommitLog(1024 * 1024);
        msc.setFlushDiskType(FlushDiskType.ASYNC_FLUSH);
        msc.setHaListenPort(0); // any free port: another store on the machine must not collide on 10912
        msc.setCompactionCqMappedFileSize(8 * 46); // 7 units and the end unit per CQ file
        msc.setCompactionMappedFileSize(6000); // CompactionLog rounds it to a multiple of the CQ size: 6072
        msc.setCompactionScheduleInternal(3_600_000); // the scheduler never runs compaction by itself during the run
        msc.setCompactionThreadNum(1);
        msc.setMaxOffsetMapSize(1024 * 1024); // the OffsetMap's buffer (100 MiB by default)

        ConcurrentHashMap<String, TopicConfig> topics = new ConcurrentHashMap<>();
        TopicConfig compact = new TopicConfig(TOPIC, QUEUES, QUEUES);
        Map<String, String> attributes = new HashMap<>();
        attributes.put("cleanup.policy", "COMPACTION");
        compact.setAttributes(attributes);
        topics.put(TOPIC, compact);
        topics.put(PLAIN, new TopicConfig(PLAIN, 1, 1));
        if (!reread) writeTopicsJson(root, topics);

        DefaultMessageStore store = new DefaultMessageStore(msc, null, null, new BrokerConfig(), topics);
        Map<String, Object> truth = new LinkedHashMap<>();
        boolean loaded = store.load();
        truth.put("loadReturned", loaded);
        if (!loaded && !reread) throw new IllegalStateException("load failed");
        if (!loaded) { // as a broker: it does not start
            Files.write(new File(args[1]).toPath(), JSON.toJSONString(truth).getBytes(StandardCharsets.UTF_8));
            System.exit(0);
        }
        store.start();

        if (!reread) {
            put(store, 0, 60);
            compactAll(store);
            put(store, 60, 50);
            compactAll(store);
        }

        CompactionStore cs = compactionStore(store);
        truth.put("positionCheckpoint", new TreeMap<>(cs.getPositionMgr().getQueueOffsetMap()));
        List<Object> queues = new ArrayList<>();
        for (int q = 0; q < QUEUES; q++) {
            CompactionLog clog = log(cs, q);
            if (clog == null) {
                Map<String, Object> gone = new LinkedHashMap<>();
                gone.put("queueId", q);
                gone.put("loaded", false);
                queues.add(gone);
                continue;
            }
            truth.put("compactionLogFileSize", intField(CompactionLog.class, clog, "compactionLogMappedFileSize"));
            truth.put("compactionCqFileSize", intField(CompactionLog.class, clog, "compactionCqMappedFileSize"));
            queues.add(queue(store, clog, q));
        }
        truth.put("queues", queues);
        store.shutdown(); // CompactionStore.shutdown: flush, persist position-checkpoint
        Files.write(new File(args[1]).toPath(),
            JSON.toJSONString(truth, SerializerFeature.PrettyFormat).getBytes(StandardCharsets.UTF_8));
        System.exit(0);
    }

    static void writeTopicsJson(File root, ConcurrentHashMap<String, TopicConfig> topics) throws Exception {
        TopicConfigSerializeWrapper w = new TopicConfigSerializeWrapper();
        w.setTopicConfigTable(topics);
        File config = new File(root, "config");
        config.mkdirs();
        Files.write(new File(config, "topics.json").toPath(), w.toJson(true).getBytes(StandardCharsets.UTF_8));
    }

    /** Messages n0 .. n0+count-1: CompactTopic queue n % 2, key k(n % 9) except every 11th (no key); every 13th has
     *  an empty body; bodies 40 B .. 1.6 KB so both the log (6072 B) and the CQ (7 units) fill files first; every
     *  7th message goes to PlainTopic. */
    static void put(DefaultMessageStore store, int n0, int count) throws Exception {
        InetSocketAddress born = new InetSocketAddress("127.0.0.1", 50000);
        InetSocketAddress host = new InetSocketAddress("127.0.0.1", 10911);
        for (int n = n0; n < n0 + count; n++) {
            MessageExtBrokerInner m = new MessageExtBrokerInner();
            m.setTopic(n % 7 == 6 ? PLAIN : TOPIC);
            m.setQueueId(m.getTopic().equals(PLAIN) ? 0 : n % QUEUES);
            m.setTags("t" + (n % 3));
            if (n % 11 != 10) m.setKeys("k" + (n % 9));
            byte[] body = new byte[n % 13 == 12 ? 0 : 40 + (n * 397) % 1600];
            for (int i = 0; i < body.length; i++) body[i] = (byte) ('a' + (i + n) % 26);
            m.setBody(body);
            m.setBornHost(born);
            m.setStoreHost(host);
            m.setBornTimestamp(System.currentTimeMillis());
            m.setPropertiesString(MessageDecoder.messageProperties2String(m.getProperties()));
            m.setTagsCode(MessageExtBrokerInner.tagsString2tagsCode(m.getTags()));
            PutMessageResult res = store.putMessage(m);
            if (res.getPutMessageStatus() != PutMessageStatus.PUT_OK) throw new IllegalStateException("put: " + res);
        }
        long t0 = System.currentTimeMillis();
        while (store.dispatchBehindBytes() > 0) {
            if (System.currentTimeMillis() - t0 > 60_000) throw new IllegalStateException("dispatch did not finish");
            Thread.sleep(5);
        }
    }

    static CompactionStore compactionStore(DefaultMessageStore store) throws Exception {
        Field f = DefaultMessageStore.class.getDeclaredField("compactionStore");
        f.setAccessible(true);
        return (CompactionStore) f.get(store);
    }

    @SuppressWarnings("unchecked")
    static CompactionLog log(CompactionStore cs, int queueId) throws Exception {
        Field f = CompactionStore.class.getDeclaredField("compactionLogTable");
        f.setAccessible(true);
        return ((ConcurrentMap<String, CompactionLog>) f.get(cs)).get(TOPIC + "_" + queueId);
    }

    static int intField(Class<?> c, Object o, String name) throws Exception {
        Field f = c.getDeclaredField(name);
        f.setAccessible(true);
        return f.getInt(o);
    }

    /** CompactionLog.doCompaction() (package-private: what CompactionStore's scheduler runs) on every queue. */
    static void compactAll(DefaultMessageStore store) throws Exception {
        Method doCompaction = CompactionLog.class.getDeclaredMethod("doCompaction");
        doCompaction.setAccessible(true);
        CompactionStore cs = compactionStore(store);
        for (int q = 0; q < QUEUES; q++) doCompaction.invoke(log(cs, q));
    }

    static Map<String, Object> queue(DefaultMessageStore store, CompactionLog clog, int queueId) {
        SparseConsumeQueue cq = clog.getCQ();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("queueId", queueId);
        out.put("loaded", true);
        out.put("minOffset", cq.getMinOffsetInQueue());
        out.put("maxOffset", cq.getMaxOffsetInQueue());
        out.put("logFiles", names(clog.getLog().getMappedFiles()));
        out.put("cqFiles", names(cq.getMappedFileQueue().getMappedFiles()));
        out.put("units", units(cq));
        out.put("messages", served(store, queueId, cq.getMaxOffsetInQueue()));
        return out;
    }

    static List<String> names(List<MappedFile> files) {
        List<String> out = new ArrayList<>();
        for (MappedFile f : files) out.add(f.getFile().getName());
        return out;
    }

    /** The units as getMessage walks them: iterateFromOrNext from the queue's start, each file's units in turn. */
    static List<Object> units(SparseConsumeQueue cq) {
        List<Object> out = new ArrayList<>();
        long next = cq.getMinOffsetInQueue();
        while (next < cq.getMaxOffsetInQueue()) {
            ReferredIterator<CqUnit> it = cq.iterateFromOrNext(next);
            if (it == null) break;
            long before = next;
            try {
                while (it.hasNext()) {
                    CqUnit u = it.next();
                    if (!(u.getPos() >= 0 && u.getSize() > 0 && u.getQueueOffset() >= 0 && u.getBatchNum() > 0)) break;
                    Map<String, Object> row = new LinkedHashMap<>();
                    row.put("queueOffset", u.getQueueOffset());
                    row.put("pos", u.getPos());
                    row.put("size", u.getSize());
                    row.put("tagsCode", u.getTagsCode());
                    row.put("batchNum", (int) u.getBatchNum());
                    row.put("compactedOffset", u.getCompactedOffset());
                    out.add(row);
                    next = u.getQueueOffset() + u.getBatchNum();
                }
            } finally {
                it.release();
            }
            if (next == before) break;
        }
        return out;
    }

    /** DefaultMessageStore.getMessage from offset 0, following nextBeginOffset, 8 messages a call. */
    static List<Object> served(DefaultMessageStore store, int queueId, long maxOffset) {
        List<Object> out = new ArrayList<>();
        long offset = 0;
        while (offset < maxOffset) {
            GetMessageResult r = store.getMessage("truth", TOPIC, queueId, offset, 8, 1024 * 1024, null);
            try {
                List<ByteBuffer> buffers = r.getMessageBufferList();
                for (int i = 0; i < buffers.size(); i++) {
                    MessageExt m = MessageDecoder.decode(buffers.get(i), true, true);
                    Map<String, Object> row = new LinkedHashMap<>();
                    row.put("queueOffset", m.getQueueOffset());
                    row.put("servedQueueOffset", r.getMessageQueueOffset().get(i));
                    row.put("physicalOffset", m.getCommitLogOffset());
                    row.put("storeSize", m.getStoreSize());
                    row.put("keys", m.getKeys());
                    row.put("tags", m.getTags());
                    row.put("bodyLength", m.getBody() == null ? 0 : m.getBody().length);
                    row.put("bodyCRC", m.getBodyCRC());
                    byte[] body = m.getBody() == null ? new byte[0] : m.getBody();
                    row.put("bodyCrcComputed", UtilAll.crc32(body));
                    row.put("bodyCrcOk", body.length == 0 || UtilAll.crc32(body) == m.getBodyCRC());
                    row.put("storeTimestamp", m.getStoreTimestamp());
                    row.put("msgId", m.getMsgId());
                    out.add(row);
                }
            } finally {
                r.release();
            }
            if (r.getStatus() != GetMessageStatus.FOUND && r.getNextBeginOffset() <= offset) break;
            offset = r.getNextBeginOffset();
        }
        return out;
    }
}

import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.util.Base64;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

import com.taobao.metamorphosis.Message;
import com.taobao.metamorphosis.MessageAccessor;
import com.taobao.metamorphosis.server.store.DeletePolicyFactory;
import com.taobao.metamorphosis.server.store.MessageSet;
import com.taobao.metamorphosis.server.store.MessageStore;
import com.taobao.metamorphosis.server.store.MessageStoreManager;
import com.taobao.metamorphosis.server.utils.MetaConfig;
import com.taobao.metamorphosis.utils.MessageUtils;

/**
 * Metamorphosis 1.4.6.2's broker start, for rmqctl's tests (MetaqLoad SERVER_INI DATA_PATH...): for each data path,
 * MetaConfig.loadFromFile(SERVER_INI) with that data path, then MessageStoreManager.init(), which builds a
 * MessageStore per {topic}-{partition} directory (loadSegments: the segment names, validateSegments,
 * FileMessageSet.recover of the last segment, which truncates it: run this on a copy). Every message is then read
 * as a consumer's fetch reads it: MessageStore.slice(offset, maxTransferSize), FileMessageSet.read,
 * MessageUtils.decodeMessage record by record, the next fetch starting at the first record that did not fit.
 * One JSON line per data path ("dataPath"), per partition ("partition") and per message ("message") on stdout.
 */
public class MetaqLoad {
    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, false, "UTF-8");
        for (int i = 1; i < args.length; i++) {
            out.println("{\"dataPath\":" + quote(args[i]) + "}");
            load(args[0], args[i], out);
        }
        out.flush();
        System.exit(0); // the managers' quartz and flush threads are not daemons
    }

    private static void load(String serverIni, String dataPath, PrintStream out) throws Exception {
        MetaConfig config = new MetaConfig();
        config.setDataPath(dataPath); // first: each topic's config copies the data path as it is parsed
        config.loadFromFile(serverIni);
        MessageStoreManager manager =
                new MessageStoreManager(config, DeletePolicyFactory.getDeletePolicy(config.getDeletePolicy()));
        manager.init();
        Map<String, ConcurrentHashMap<Integer, MessageStore>> stores = new TreeMap<>(manager.getMessageStores());
        for (Map.Entry<String, ConcurrentHashMap<Integer, MessageStore>> topic : stores.entrySet()) {
            for (MessageStore store : new TreeMap<>(topic.getValue()).values()) {
                out.println("{\"partition\":" + store.getPartition() + ",\"topic\":" + quote(store.getTopic())
                        + ",\"minOffset\":" + store.getMinOffset() + ",\"maxOffset\":" + store.getMaxOffset() + "}");
                readAll(store, config.getMaxTransferSize(), out);
            }
        }
        manager.dispose();
    }

    private static void readAll(MessageStore store, int maxTransferSize, PrintStream out) throws Exception {
        long offset = store.getMinOffset();
        while (offset < store.getMaxOffset()) {
            MessageSet set = store.slice(offset, maxTransferSize);
            if (set == null) {
                throw new IllegalStateException("no segment holds offset " + offset);
            }
            ByteBuffer buf = ByteBuffer.allocate(maxTransferSize);
            set.read(buf);
            byte[] data = buf.array();
            int at = 0;
            while (at + MessageUtils.HEADER_LEN <= buf.position()
                    && at + MessageUtils.HEADER_LEN + ByteBuffer.wrap(data, at, 4).getInt() <= buf.position()) {
                MessageUtils.DecodedMessage decoded = MessageUtils.decodeMessage(store.getTopic(), data, at);
                Message m = decoded.message;
                String attribute = m.getAttribute() == null ? "null"
                        : quote(Base64.getEncoder().encodeToString(m.getAttribute().getBytes("UTF-8")));
                out.println("{\"message\":" + (offset + at) + ",\"topic\":" + quote(store.getTopic())
                        + ",\"partition\":" + store.getPartition() + ",\"id\":" + m.getId() + ",\"flag\":"
                        + MessageAccessor.getFlag(m) + ",\"attribute\":" + attribute + ",\"payload\":"
                        + quote(Base64.getEncoder().encodeToString(m.getData())) + "}");
                at = decoded.newOffset;
            }
            if (at == 0) {
                throw new IllegalStateException("the record at offset " + offset + " does not fit a fetch");
            }
            offset += at;
        }
    }

    private static String quote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }
}

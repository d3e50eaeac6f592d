import java.io.File;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;

import com.taobao.metamorphosis.Message;
import com.taobao.metamorphosis.network.PutCommand;
import com.taobao.metamorphosis.server.store.FileMessageSet;
import com.taobao.metamorphosis.utils.MessageFlagUtils;
import com.taobao.metamorphosis.utils.MessageUtils;

/**
 * Metamorphosis 1.4.6.2's own segment code, driven from the command line for rmqctl's tests:
 *   recover SEGMENT...          FileMessageSet opened mutable, as loadSegments opens the last segment: its
 *                               recover() truncates the file; prints "size count" per segment
 *   decode SEGMENT              every record through MessageUtils.decodeMessage: "offset id flag attr|- payloadB64"
 *   encode ID ATTR_B64|- PAYLOAD_B64 ...
 *                               one batch as SimpleMessageProducer and MessageStore build it: data =
 *                               MessageUtils.encodePayload(message), flag = MessageFlagUtils.getFlag(message),
 *                               then MessageUtils.makeMessageBuffer(ids, puts); prints the bytes as base64
 */
public class MetaqOracle {
    public static void main(String[] args) throws Exception {
        switch (args[0]) {
        case "recover": {
            for (int i = 1; i < args.length; i++) {
                FileChannel ch = new RandomAccessFile(new File(args[i]), "rw").getChannel();
                FileMessageSet set = new FileMessageSet(ch, 0, ch.size(), true);
                System.out.println(set.getSizeInBytes() + " " + set.getMessageCount());
                set.close();
            }
            break;
        }
        case "decode": {
            byte[] data = Files.readAllBytes(new File(args[1]).toPath());
            int offset = 0;
            while (offset < data.length) {
                MessageUtils.DecodedMessage m = MessageUtils.decodeMessage("t", data, offset);
                Message msg = m.message;
                System.out.println(offset + " " + msg.getId() + " " + com.taobao.metamorphosis.MessageAccessor.getFlag(msg) + " "
                        + (msg.getAttribute() == null ? "-" : Base64.getEncoder().encodeToString(msg.getAttribute().getBytes("utf-8")))
                        + " " + Base64.getEncoder().encodeToString(msg.getData()));
                offset = m.newOffset;
            }
            break;
        }
        case "encode": {
            List<Long> ids = new ArrayList<Long>();
            List<PutCommand> puts = new ArrayList<PutCommand>();
            for (int i = 1; i + 2 < args.length; i += 3) {
                Message msg = new Message("t", Base64.getDecoder().decode(args[i + 2]));
                if (!args[i + 1].equals("-")) {
                    msg.setAttribute(new String(Base64.getDecoder().decode(args[i + 1]), "utf-8"));
                }
                ids.add(Long.parseLong(args[i]));
                puts.add(new PutCommand(MessageUtils.encodePayload(msg), MessageFlagUtils.getFlag(msg), -1));
            }
            ByteBuffer buf = MessageUtils.makeMessageBuffer(ids, puts);
            byte[] out = new byte[buf.remaining()];
            buf.get(out);
            System.out.println(Base64.getEncoder().encodeToString(out));
            break;
        }
        default:
            throw new IllegalArgumentException(args[0]);
        }
    }
}

// Every stored field of a message as the Java client received it, for the store conformance
// tests (tests/conformance/test_stores.py): they compare these records field by field with what
// `rmq inspect` and `rmq spark-export` read from the store files, and with what another broker
// serves from the same files.  Bodies are base64 (exact bytes); properties are all of them,
// system ones included, with the two a pull adds on the client (MIN_OFFSET, MAX_OFFSET) and the
// consume start time removed.
package rmq.conformance;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;

final class StoreRecords {
    private StoreRecords() {
    }

    /** "ip:port" of a born or store host. */
    static String host(SocketAddress address) {
        if (!(address instanceof InetSocketAddress)) {
            return String.valueOf(address);
        }
        InetSocketAddress inet = (InetSocketAddress) address;
        return inet.getAddress().getHostAddress() + ":" + inet.getPort();
    }

    /** The properties the store holds: without what the client adds after a pull. */
    static Map<String, String> storedProperties(MessageExt message) {
        Map<String, String> properties = new TreeMap<>(message.getProperties());
        properties.remove(MessageConst.PROPERTY_MIN_OFFSET);
        properties.remove(MessageConst.PROPERTY_MAX_OFFSET);
        properties.remove(MessageConst.PROPERTY_CONSUME_START_TIMESTAMP);
        return properties;
    }

    /**
     * The record of a message `group` received.  A retried message is stored in the group's
     * retry topic; the client hands it over under its original topic (RETRY_TOPIC), so the
     * stored one is put back here.
     */
    static JSONObject record(String group, MessageExt message) {
        JSONObject out = new JSONObject(true);
        boolean retried = message.getProperty(MessageConst.PROPERTY_RETRY_TOPIC) != null;
        out.put("topic", retried ? MixAll.getRetryTopic(group) : message.getTopic());
        out.put("queueId", message.getQueueId());
        out.put("queueOffset", message.getQueueOffset());
        out.put("commitLogOffset", message.getCommitLogOffset());
        out.put("msgId", message.getMsgId());
        if (message instanceof MessageClientExt) {
            out.put("offsetMsgId", ((MessageClientExt) message).getOffsetMsgId());
        }
        out.put("tags", message.getTags());
        out.put("keys", message.getKeys());
        out.put("properties", storedProperties(message));
        out.put("body", Base64.getEncoder().encodeToString(message.getBody()));
        out.put("bodyCrc", message.getBodyCRC());
        out.put("flag", message.getFlag());
        out.put("sysFlag", message.getSysFlag());
        out.put("bornTimestamp", message.getBornTimestamp());
        out.put("bornHost", host(message.getBornHost()));
        out.put("storeTimestamp", message.getStoreTimestamp());
        out.put("storeHost", host(message.getStoreHost()));
        out.put("reconsumeTimes", message.getReconsumeTimes());
        out.put("preparedTransactionOffset", message.getPreparedTransactionOffset());
        out.put("storeSize", message.getStoreSize());
        return out;
    }

    static JSONArray records(String group, List<MessageExt> messages) {
        JSONArray out = new JSONArray();
        for (MessageExt message : messages) {
            out.add(record(group, message));
        }
        return out;
    }
}

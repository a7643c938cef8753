// Turns what the Java client received into JSON the harness compares between Apache and rmq:
// only fields both brokers must agree on (no message ids, hosts, store times or commit log
// offsets), sorted so that arrival order does not matter unless a scenario asks for it.
package rmq.conformance;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;

final class Records {
    private Records() {
    }

    /** Body as UTF-8 text when it is valid UTF-8, else base64 under "bodyBase64". */
    static void putBody(JSONObject out, byte[] body) {
        try {
            out.put("body", StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(body))
                .toString());
        } catch (CharacterCodingException e) {
            out.put("bodyBase64", Base64.getEncoder().encodeToString(body));
        }
    }

    /** The user properties of a message: every property that is not one of RocketMQ's own. */
    static Map<String, String> userProperties(Message message) {
        Map<String, String> user = new TreeMap<>();
        for (Map.Entry<String, String> e : message.getProperties().entrySet()) {
            if (!MessageConst.STRING_HASH_SET.contains(e.getKey())) {
                user.put(e.getKey(), e.getValue());
            }
        }
        return user;
    }

    static JSONObject record(MessageExt message) {
        JSONObject out = new JSONObject(true);
        out.put("topic", message.getTopic());
        out.put("tags", message.getTags());
        out.put("keys", message.getKeys());
        putBody(out, message.getBody());
        out.put("properties", userProperties(message));
        out.put("sysFlagCompressed", (message.getSysFlag() & 1) != 0);
        out.put("reconsumeTimes", message.getReconsumeTimes());
        return out;
    }

    /** Records sorted by keys, then body. */
    static JSONArray sorted(List<MessageExt> messages) {
        List<JSONObject> records = new ArrayList<>();
        for (MessageExt message : messages) {
            records.add(record(message));
        }
        records.sort(Comparator.comparing((JSONObject r) -> String.valueOf(r.get("keys")))
            .thenComparing(r -> String.valueOf(r.get("body")))
            .thenComparing(r -> String.valueOf(r.get("bodyBase64"))));
        return new JSONArray(new ArrayList<>(records));
    }

    /** Records in the order given. */
    static JSONArray inOrder(List<MessageExt> messages) {
        JSONArray out = new JSONArray();
        for (MessageExt message : messages) {
            out.add(record(message));
        }
        return out;
    }

    /**
     * True when the queue offsets of each queue are exactly 0..n-1 (nothing lost, nothing
     * twice), whatever queue each message went to.
     */
    static boolean denseOffsets(List<MessageExt> messages) {
        Map<Integer, List<Long>> byQueue = new TreeMap<>();
        for (MessageExt m : messages) {
            byQueue.computeIfAbsent(m.getQueueId(), q -> new ArrayList<>()).add(m.getQueueOffset());
        }
        for (List<Long> offsets : byQueue.values()) {
            offsets.sort(Long::compare);
            for (int i = 0; i < offsets.size(); i++) {
                if (offsets.get(i) != i) {
                    return false;
                }
            }
        }
        return true;
    }

    /** The message every scenario sends: index `i` decides body, tags, keys and properties. */
    static Message numbered(String topic, int i, String tagsCycle) {
        String[] tags = tagsCycle.split(",");
        Message message = new Message(topic, tags[i % tags.length], "key-" + i,
            ("body-" + i).getBytes(StandardCharsets.UTF_8));
        message.putUserProperty("index", Integer.toString(i));
        message.putUserProperty("parity", i % 2 == 0 ? "even" : "odd");
        return message;
    }
}

// Scenarios about what a message carries and how it is found again: bodies around and far over
// compressMsgBodyOverHowmuch (compressed on the wire, read back intact, one over 1 MiB), and
// keys plus many UTF-8 user properties, read back by a consumer, by queryMessage on a key, by
// viewMessage on the broker's offset message id and by the client's unique id.
package rmq.conformance;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.rocketmq.client.QueryResult;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

final class ProducerLookups {
    private ProducerLookups() {
    }

    /** A body of `size` bytes: text that compresses well, or seeded random bytes that do not. */
    static byte[] body(int size, boolean random) {
        byte[] body = new byte[size];
        if (random) {
            new Random(size).nextBytes(body);
        } else {
            byte[] line = "a line of text that zlib squeezes well. ".getBytes(StandardCharsets.UTF_8);
            for (int i = 0; i < size; i++) {
                body[i] = line[i % line.length];
            }
        }
        return body;
    }

    /**
     * One sync send per entry of `sizes` ("4095 4096 5000 1572864r 3145728": `r` = random
     * bytes); the consumer must read each back byte for byte, with the compressed flag set on
     * exactly the bodies of at least compressMsgBodyOverHowmuch bytes.
     */
    static JSONObject large(Spec spec) throws Exception {
        spec.createTopics();
        String[] sizes = Spec.split(spec.str("sizes", "4095 4096 5000 1572864r 3145728"));
        Map<String, String> sentDigests = new HashMap<>();
        DefaultMQProducer producer = spec.startedProducer();
        JSONArray statuses = new JSONArray();
        try {
            for (String size : sizes) {
                boolean random = size.endsWith("r");
                int length = Integer.parseInt(random ? size.substring(0, size.length() - 1) : size);
                byte[] body = body(length, random);
                String key = "large-" + size;
                sentDigests.put(key, ProducerRecords.sha256(body));
                Message message = new Message(spec.topic(), "TagA", key, body);
                SendResult result = producer.send(message);
                statuses.add(result.getSendStatus().name());
                if (!Arrays.equals(message.getBody(), body)) {
                    throw new IllegalStateException("send left a different body in " + key);
                }
            }
        } finally {
            producer.shutdown();
        }
        List<MessageExt> received = ProducerScenarios.readBack(spec, sizes.length);
        JSONObject out = new JSONObject();
        out.put("count", received.size());
        out.put("messages", ProducerRecords.compact(received));
        out.put("statuses", statuses);
        boolean intact = received.size() == sizes.length;
        for (MessageExt m : received) {
            intact &= ProducerRecords.sha256(m.getBody()).equals(sentDigests.get(m.getKeys()));
        }
        out.put("intact", intact);
        return out;
    }

    /** `count` messages with two keys each (`kp-<i>` and `shared`) and `properties` UTF-8 properties. */
    static Message keyed(String topic, int i, int properties) {
        Message message = new Message(topic, "Tag-ü",
            ("Grüße 日本語 🚀 #" + i).getBytes(StandardCharsets.UTF_8));
        message.setKeys(List.of("kp-" + i, "shared"));
        for (int p = 0; p < properties; p++) {
            message.putUserProperty(String.format("prop%02d", p), "wert-ä-ö-ß-値-" + i + "-" + p);
        }
        message.putUserProperty("名前", "値 — ✓ " + i);
        message.putUserProperty("emoji", "🚀🎉");
        return message;
    }

    /** queryMessage polled until it finds `expected` messages (the index is built after the send). */
    static List<MessageExt> queryByKey(DefaultMQProducer producer, String topic, String key,
        int expected, long begin, long timeoutMillis) throws Exception {
        List<List<MessageExt>> found = new ArrayList<>();
        found.add(List.of());
        Waits.until(() -> {
            try {
                QueryResult result = producer.queryMessage(topic, key, 32, begin,
                    System.currentTimeMillis() + 600_000);
                found.set(0, result.getMessageList());
                return result.getMessageList().size() >= expected;
            } catch (MQClientException | InterruptedException e) {
                return false;
            }
        }, timeoutMillis);
        return found.get(0);
    }

    static JSONObject keysAndProperties(Spec spec) throws Exception {
        spec.createTopics();
        int count = spec.integer("count", 3);
        int properties = spec.integer("properties", 40);
        long timeout = spec.seconds("timeout", 30);
        long begin = System.currentTimeMillis() - 600_000;
        DefaultMQProducer producer = spec.startedProducer();
        Map<String, SendResult> sent = new HashMap<>();
        JSONObject out = new JSONObject();
        try {
            JSONArray statuses = new JSONArray();
            for (int i = 0; i < count; i++) {
                SendResult result = producer.send(keyed(spec.topic(), i, properties));
                statuses.add(result.getSendStatus().name());
                sent.put("kp-" + i, result);
            }
            out.put("statuses", statuses);
            List<MessageExt> received = ProducerScenarios.readBack(spec, count);
            out.putAll(Waits.Collector.summary(received));
            Map<String, JSONObject> consumed = new HashMap<>();
            boolean idsMatch = received.size() == count;
            for (MessageExt m : received) {
                String own = m.getKeys().split(" ")[0];
                consumed.put(own, Records.record(m));
                idsMatch &= sent.containsKey(own) && sent.get(own).getMsgId().equals(m.getMsgId());
            }
            out.put("consumerSeesSendIds", idsMatch);

            List<MessageExt> byShared = queryByKey(producer, spec.topic(), "shared", count, begin,
                timeout);
            out.put("queryShared", Records.sorted(byShared));
            List<MessageExt> byOwn = queryByKey(producer, spec.topic(), "kp-0", 1, begin, timeout);
            out.put("queryOwn", Records.sorted(byOwn));

            boolean viewMatches = true;
            boolean uniqMatches = true;
            for (Map.Entry<String, SendResult> e : sent.entrySet()) {
                JSONObject expected = consumed.get(e.getKey());
                MessageExt viewed = producer.viewMessage(e.getValue().getOffsetMsgId());
                viewMatches &= Records.record(viewed).equals(expected);
                MessageExt byUniq = producer.getDefaultMQProducerImpl()
                    .queryMessageByUniqKey(spec.topic(), e.getValue().getMsgId());
                uniqMatches &= byUniq != null && Records.record(byUniq).equals(expected);
            }
            out.put("viewByOffsetIdMatches", viewMatches);
            out.put("queryByUniqueIdMatches", uniqMatches);
        } finally {
            producer.shutdown();
        }
        return out;
    }
}

// Scenarios of DefaultMQProducer's send modes: sync, async (SendCallback), oneway, batch
// (send(Collection), also a list split into several batches), orderly sends through a
// MessageQueueSelector and delay levels.  Each reads everything back with a push consumer of a
// new group from the first offset and reports what arrived and where; the placement checks
// (dense queue offsets, every message at the queue and offset its send result named) are what
// a correct broker must show.
package rmq.conformance;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

final class ProducerScenarios {
    private ProducerScenarios() {
    }

    /** Read every message of the spec's topic with a new push consumer group from the start. */
    static List<MessageExt> readBack(Spec spec, int expected) throws Exception {
        return readBack(spec, spec.topic(), spec.group() + "-readback", expected);
    }

    static List<MessageExt> readBack(Spec spec, String topic, String group, int expected)
        throws Exception {
        DefaultMQPushConsumer consumer = spec.pushConsumer(group);
        consumer.subscribe(topic, "*");
        Waits.Collector collector = new Waits.Collector();
        ConsumerSupport.collectFromFirst(consumer, collector).start();
        try {
            return collector.await(expected, spec.seconds("timeout", 60), 500);
        } finally {
            consumer.shutdown();
        }
    }

    static String at(MessageExt message) {
        return message.getQueueId() + "@" + message.getQueueOffset();
    }

    /** Where message `i` of what one send stored went: queue@offset as its result names it. */
    static String at(SendResult result, int i) {
        return result.getMessageQueue().getQueueId() + "@" + (result.getQueueOffset() + i);
    }

    /**
     * The read-back report: what arrived (sorted records), whether queue offsets are dense and
     * whether the messages are exactly at the `placed` queue@offset positions the sends named
     * (`placed` null: the sends named none, as oneway sends).
     */
    static JSONObject report(List<MessageExt> received, List<String> placed) {
        JSONObject out = Waits.Collector.summary(received);
        out.put("denseOffsets", Records.denseOffsets(received));
        if (placed != null) {
            List<String> receivedAt = new ArrayList<>();
            for (MessageExt m : received) {
                receivedAt.add(at(m));
            }
            out.put("sentWhereReceived",
                receivedAt.containsAll(placed) && placed.containsAll(receivedAt)
                    && receivedAt.size() == placed.size());
        }
        return out;
    }

    static JSONObject sync(Spec spec) throws Exception {
        spec.createTopics();
        int count = spec.integer("count", 20);
        DefaultMQProducer producer = spec.startedProducer();
        JSONArray statuses = new JSONArray();
        List<String> placed = new ArrayList<>();
        try {
            for (int i = 0; i < count; i++) {
                Message message = Records.numbered(spec.topic(), i, "TagA,TagB");
                SendResult result = producer.send(message);
                statuses.add(result.getSendStatus().name());
                placed.add(at(result, 0));
            }
        } finally {
            producer.shutdown();
        }
        JSONObject out = report(readBack(spec, count), placed);
        out.put("statuses", statuses);
        return out;
    }

    /** `count` sends with a SendCallback each; every callback must complete. */
    static JSONObject async(Spec spec) throws Exception {
        spec.createTopics();
        int count = spec.integer("count", 20);
        DefaultMQProducer producer = spec.startedProducer();
        CountDownLatch done = new CountDownLatch(count);
        Map<Integer, String> placedBy = new ConcurrentHashMap<>();
        Map<Integer, String> outcomes = new ConcurrentHashMap<>();
        try {
            for (int i = 0; i < count; i++) {
                final int index = i;
                producer.send(Records.numbered(spec.topic(), i, "TagA"), new SendCallback() {
                    @Override
                    public void onSuccess(SendResult result) {
                        outcomes.put(index, result.getSendStatus().name());
                        placedBy.put(index, at(result, 0));
                        done.countDown();
                    }

                    @Override
                    public void onException(Throwable e) {
                        outcomes.put(index, "exception: " + e.getClass().getSimpleName());
                        done.countDown();
                    }
                });
            }
            done.await(spec.seconds("timeout", 60), TimeUnit.MILLISECONDS);
        } finally {
            producer.shutdown();
        }
        JSONObject out = report(readBack(spec, count), new ArrayList<>(placedBy.values()));
        out.put("callbacks", outcomes.size());
        out.put("outcomes", new TreeMap<>(outcomes).values());
        return out;
    }

    /** `count` oneway sends (no result), then everything read back. */
    static JSONObject oneway(Spec spec) throws Exception {
        spec.createTopics();
        int count = spec.integer("count", 20);
        DefaultMQProducer producer = spec.startedProducer();
        try {
            for (int i = 0; i < count; i++) {
                producer.sendOneway(Records.numbered(spec.topic(), i, "TagA,TagB,TagC"));
            }
        } finally {
            producer.shutdown();
        }
        return report(readBack(spec, count), null);
    }

    /** Message `i` of a batch whose bodies are `size` bytes. */
    static Message sized(String topic, int i, int size) {
        Message message = Records.numbered(topic, i, "TagA");
        byte[] body = new byte[size];
        Arrays.fill(body, (byte) ('a' + i % 26));
        byte[] label = ("body-" + i + "-").getBytes(StandardCharsets.UTF_8);
        System.arraycopy(label, 0, body, 0, Math.min(label.length, size));
        message.setBody(body);
        return message;
    }

    /** The wire size of one message in a batch, as the client's batch encoder lays it out. */
    static int batchSize(Message message) {
        int size = 20 + message.getBody().length;
        for (Map.Entry<String, String> e : message.getProperties().entrySet()) {
            size += e.getKey().length() + e.getValue().length() + 2;
        }
        return size;
    }

    /** Split `messages` into lists of at most `limit` encoded bytes each. */
    static List<List<Message>> split(List<Message> messages, int limit) {
        List<List<Message>> batches = new ArrayList<>();
        List<Message> current = new ArrayList<>();
        int size = 0;
        for (Message message : messages) {
            int next = batchSize(message);
            if (!current.isEmpty() && size + next > limit) {
                batches.add(current);
                current = new ArrayList<>();
                size = 0;
            }
            current.add(message);
            size += next;
        }
        if (!current.isEmpty()) {
            batches.add(current);
        }
        return batches;
    }

    /**
     * One batch of `count` small messages, then `large` messages of `largeBody` bytes split
     * into batches of at most `batchLimit` bytes; each batch's messages land at consecutive
     * offsets of one queue, starting at the offset its send result names.
     */
    static JSONObject batch(Spec spec) throws Exception {
        spec.createTopics();
        int count = spec.integer("count", 10);
        int large = spec.integer("large", 40);
        int largeBody = spec.integer("largeBody", 20 * 1024);
        List<List<Message>> batches = new ArrayList<>();
        List<Message> small = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            small.add(Records.numbered(spec.topic(), i, "TagA,TagB"));
        }
        batches.add(small);
        List<Message> big = new ArrayList<>();
        for (int i = count; i < count + large; i++) {
            big.add(sized(spec.topic(), i, largeBody));
        }
        List<List<Message>> splitBatches = split(big, spec.integer("batchLimit", 256 * 1024));
        batches.addAll(splitBatches);
        DefaultMQProducer producer = spec.startedProducer();
        JSONArray statuses = new JSONArray();
        List<String> placed = new ArrayList<>();
        JSONArray idsPerBatch = new JSONArray();
        try {
            for (List<Message> list : batches) {
                SendResult result = producer.send(list);
                statuses.add(result.getSendStatus().name());
                idsPerBatch.add(result.getMsgId().split(",").length);
                for (int i = 0; i < list.size(); i++) {
                    placed.add(at(result, i));
                }
            }
        } finally {
            producer.shutdown();
        }
        List<MessageExt> received = readBack(spec, count + large);
        JSONObject out = report(received, placed);
        out.put("messages", ProducerRecords.compact(received));
        out.put("statuses", statuses);
        out.put("batches", batches.size());
        out.put("splitBatches", splitBatches.size());
        out.put("idsPerBatch", idsPerBatch);
        return out;
    }

    /**
     * `perKey` messages for each sharding key of `keys`, interleaved, sent through a selector
     * that maps the key to a queue: all messages of a key must be in one queue, at increasing
     * offsets in send order.
     */
    static JSONObject orderly(Spec spec) throws Exception {
        spec.createTopics();
        String[] keys = Spec.split(spec.str("keys", "order-A order-B order-C"));
        int perKey = spec.integer("perKey", 10);
        MessageQueueSelector selector = (mqs, msg, arg) ->
            mqs.get(Math.floorMod(arg.hashCode(), mqs.size()));
        DefaultMQProducer producer = spec.startedProducer();
        JSONArray statuses = new JSONArray();
        List<String> placed = new ArrayList<>();
        try {
            for (int seq = 0; seq < perKey; seq++) {
                for (String key : keys) {
                    Message message = new Message(spec.topic(), "TagA", key,
                        (key + ":" + seq).getBytes(StandardCharsets.UTF_8));
                    message.putUserProperty("seq", Integer.toString(seq));
                    SendResult result = producer.send(message, selector, key);
                    statuses.add(result.getSendStatus().name());
                    placed.add(at(result, 0));
                }
            }
        } finally {
            producer.shutdown();
        }
        List<MessageExt> received = readBack(spec, keys.length * perKey);
        JSONObject out = report(received, placed);
        JSONObject perKeyOut = new JSONObject(true);
        for (String key : keys) {
            List<MessageExt> mine = new ArrayList<>();
            for (MessageExt m : received) {
                if (key.equals(m.getKeys())) {
                    mine.add(m);
                }
            }
            mine.sort((a, b) -> Long.compare(a.getQueueOffset(), b.getQueueOffset()));
            JSONArray queues = new JSONArray();
            List<Integer> seqs = new ArrayList<>();
            for (MessageExt m : mine) {
                if (!queues.contains(m.getQueueId())) {
                    queues.add(m.getQueueId());
                }
                seqs.add(Integer.parseInt(m.getUserProperty("seq")));
            }
            boolean inOrder = seqs.size() == perKey;
            for (int i = 0; i < seqs.size(); i++) {
                inOrder &= seqs.get(i) == i;
            }
            JSONObject keyOut = new JSONObject(true);
            keyOut.put("queues", queues);
            keyOut.put("inSendOrder", inOrder);
            perKeyOut.put(key, keyOut);
        }
        out.put("perKey", perKeyOut);
        out.put("statuses", statuses);
        return out;
    }

    /**
     * One message with delay level `level` and one without, sent together to a running
     * consumer: the plain one arrives at once, the delayed one not before `delayMillis` (less
     * `slackMillis`) after its send returned and within `timeout`.
     */
    static JSONObject delay(Spec spec) throws Exception {
        spec.createTopics();
        int level = spec.integer("level", 2);
        long delayMillis = spec.seconds("delaySeconds", 2);
        long slackMillis = spec.seconds("slackSeconds", 0.2);
        DefaultMQPushConsumer consumer = spec.pushConsumer(spec.group());
        consumer.subscribe(spec.topic(), "*");
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        Map<String, Long> arrivedAt = new ConcurrentHashMap<>();
        Waits.Collector collector = new Waits.Collector();
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                arrivedAt.putIfAbsent(m.getKeys(), System.nanoTime());
            }
            collector.addAll(msgs);
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        DefaultMQProducer producer = spec.startedProducer();
        long delayedSent;
        JSONArray statuses = new JSONArray();
        List<MessageExt> received;
        try {
            Message delayed = new Message(spec.topic(), "TagA", "delayed",
                "delayed".getBytes(StandardCharsets.UTF_8));
            delayed.setDelayTimeLevel(level);
            Message plain = new Message(spec.topic(), "TagA", "plain",
                "plain".getBytes(StandardCharsets.UTF_8));
            delayedSent = System.nanoTime();
            statuses.add(producer.send(delayed).getSendStatus().name());
            statuses.add(producer.send(plain).getSendStatus().name());
            received = collector.await(2, spec.seconds("timeout", 30), 500);
        } finally {
            producer.shutdown();
            consumer.shutdown();
        }
        JSONObject out = Waits.Collector.summary(received);
        out.put("statuses", statuses);
        Long delayedAt = arrivedAt.get("delayed");
        Long plainAt = arrivedAt.get("plain");
        out.put("plainDelivered", plainAt != null);
        out.put("plainBeforeDelayed", plainAt != null && (delayedAt == null || plainAt < delayedAt));
        out.put("delayedDelivered", delayedAt != null);
        out.put("delayedNotEarly", delayedAt != null
            && TimeUnit.NANOSECONDS.toMillis(delayedAt - delayedSent) >= delayMillis - slackMillis);
        JSONArray levels = new JSONArray();
        for (MessageExt m : received) {
            levels.add(m.getKeys() + ":" + m.getDelayTimeLevel());
        }
        levels.sort(null);
        out.put("delayLevelsReceived", levels);
        return out;
    }
}

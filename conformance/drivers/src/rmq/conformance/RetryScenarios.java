// Scenarios of consumption retries, with setMaxReconsumeTimes(n) and a listener that always
// fails. Concurrently (RECONSUME_LATER): each message comes back through %RETRY%<group>
// (CONSUMER_SEND_MSG_BACK, delay level 3 + reconsume times) n times, then the broker moves it
// to %DLQ%<group>. Orderly (SUSPEND_CURRENT_QUEUE_A_MOMENT): the client redelivers in place n
// times, then sends the message to %RETRY%<group> with reconsumeTimes = max in the send
// header, and the broker's send path puts it in the DLQ. A pull consumer reads the DLQ.
package rmq.conformance;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.route.QueueData;
import org.apache.rocketmq.common.protocol.route.TopicRouteData;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

final class RetryScenarios {
    private RetryScenarios() {
    }

    /** What the listener saw, taken at delivery time (the client reuses message objects). */
    static final class Deliveries {
        private final List<int[]> seen = new ArrayList<>();
        private final Map<Integer, String[]> firstIds = new TreeMap<>();
        private final Set<String> topics = new TreeSet<>();

        synchronized void add(List<MessageExt> msgs) {
            for (MessageExt m : msgs) {
                int index = ConsumerSupport.index(m);
                seen.add(new int[] {index, m.getReconsumeTimes(), m.getQueueId()});
                topics.add(m.getTopic());
                String offsetId = m instanceof MessageClientExt
                    ? ((MessageClientExt) m).getOffsetMsgId() : m.getMsgId();
                firstIds.putIfAbsent(index, new String[] {offsetId,
                    m.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)});
            }
        }

        synchronized int size() {
            return seen.size();
        }

        /** Per index, the reconsumeTimes of its deliveries, sorted. */
        synchronized JSONObject reconsumeTimesByIndex() {
            Map<Integer, List<Integer>> byIndex = new TreeMap<>();
            for (int[] d : seen) {
                byIndex.computeIfAbsent(d[0], i -> new ArrayList<>()).add(d[1]);
            }
            JSONObject out = new JSONObject(true);
            for (Map.Entry<Integer, List<Integer>> e : byIndex.entrySet()) {
                e.getValue().sort(Integer::compare);
                out.put(Integer.toString(e.getKey()), e.getValue());
            }
            return out;
        }

        /** Whether, per queue, the delivered indexes never went back (retries in place). */
        synchronized boolean inPlace() {
            Map<Integer, Integer> last = new TreeMap<>();
            boolean ordered = true;
            for (int[] d : seen) {
                Integer before = last.put(d[2], d[0]);
                ordered &= before == null || before <= d[0];
            }
            return ordered;
        }

        synchronized Set<String> topics() {
            return new TreeSet<>(topics);
        }

        /** Which id of the first delivery of `index` `id` is: offsetMsgId, uniqKey or other. */
        synchronized String whichId(int index, String id) {
            String[] ids = firstIds.get(index);
            if (ids == null || id == null) {
                return null;
            }
            return id.equals(ids[0]) ? "offsetMsgId" : id.equals(ids[1]) ? "uniqKey" : "other";
        }
    }

    /**
     * Concurrently: `count` messages, each consumed 1 + maxReconsumeTimes times (reconsumeTimes
     * seen per index), then found in the DLQ: its route (queues, perm), and what it holds.
     */
    static JSONObject deadLetter(Spec spec) throws Exception {
        return run(spec, false);
    }

    /**
     * Orderly: `count` messages each delivered 1 + maxReconsumeTimes times in a row in its
     * queue (retriesInPlace: per queue the delivered indexes never go back), then in the DLQ.
     */
    static JSONObject orderlyDeadLetter(Spec spec) throws Exception {
        return run(spec, true);
    }

    private static JSONObject run(Spec spec, boolean orderly) throws Exception {
        ConsumerSupport.prepare(spec, 2);
        int count = spec.integer("count", 4);
        int maxReconsume = spec.integer("maxReconsumeTimes", 2);
        ConsumerSupport.sendNumbered(spec, 0, count, "TagA");
        Deliveries deliveries = new Deliveries();
        DefaultMQPushConsumer consumer = spec.pushConsumer(spec.group());
        consumer.subscribe(spec.topic(), "*");
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setMaxReconsumeTimes(maxReconsume);
        if (orderly) {
            consumer.setSuspendCurrentQueueTimeMillis(100);
            consumer.registerMessageListener((MessageListenerOrderly) (msgs, context) -> {
                deliveries.add(msgs);
                return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT;
            });
        } else {
            consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
                deliveries.add(msgs);
                return ConsumeConcurrentlyStatus.RECONSUME_LATER;
            });
        }
        String dlq = MixAll.getDLQTopic(spec.group());
        consumer.start();
        try {
            Waits.until(() -> deliveries.size() >= count * (1 + maxReconsume),
                spec.seconds("timeout", 40));
            JSONObject out = new JSONObject(true);
            out.put("dlq", readDeadLetters(spec, dlq, count, deliveries));
            out.put("dlqRoute", route(spec, dlq));
            out.put("retryRoute", route(spec, MixAll.getRetryTopic(spec.group())));
            // Read last, so that a wrong extra delivery had the DLQ read's time to show.
            out.put("deliveries", deliveries.reconsumeTimesByIndex());
            out.put("deliveredTopics", deliveries.topics());
            if (orderly) {
                out.put("retriesInPlace", deliveries.inPlace());
            }
            return out;
        } finally {
            consumer.shutdown();
        }
    }

    /** The route's queue counts and perm of `topic` (null when the name server has none). */
    private static JSONObject route(Spec spec, String topic) throws Exception {
        DefaultMQAdminExt admin = spec.admin();
        try {
            TopicRouteData route = admin.examineTopicRouteInfo(topic);
            JSONObject out = new JSONObject(true);
            for (QueueData queue : route.getQueueDatas()) {
                out.put("readQueueNums", queue.getReadQueueNums());
                out.put("writeQueueNums", queue.getWriteQueueNums());
                out.put("perm", queue.getPerm());
            }
            return out;
        } catch (Exception e) {
            return null;
        } finally {
            admin.shutdown();
        }
    }

    /**
     * Every message of the DLQ (pulled by queue from offset 0 until `count` arrived): its
     * record, the system properties it carries (names), RETRY_TOPIC, which id of the first
     * delivery ORIGIN_MESSAGE_ID is, and whether UNIQ_KEY is the first delivery's.
     */
    @SuppressWarnings("deprecation")
    private static JSONArray readDeadLetters(Spec spec, String dlq, int count,
        Deliveries deliveries) throws Exception {
        DefaultMQPullConsumer reader = spec.pullConsumer(spec.group() + "-dlq-reader");
        reader.start();
        List<MessageExt> found = new ArrayList<>();
        try {
            Waits.until(() -> {
                try {
                    found.clear();
                    for (MessageQueue queue : reader.fetchSubscribeMessageQueues(dlq)) {
                        PullResult pulled = reader.pull(queue, "*", 0, 32);
                        if (pulled.getPullStatus() == PullStatus.FOUND) {
                            found.addAll(pulled.getMsgFoundList());
                        }
                    }
                    return found.size() >= count;
                } catch (Exception e) {
                    return false;
                }
            }, spec.seconds("timeout", 40));
        } finally {
            reader.shutdown();
        }
        found.sort((a, b) -> Integer.compare(ConsumerSupport.index(a), ConsumerSupport.index(b)));
        JSONArray out = new JSONArray();
        for (MessageExt m : found) {
            int index = ConsumerSupport.index(m);
            JSONObject record = Records.record(m);
            record.put("queueId", m.getQueueId());
            record.put("RETRY_TOPIC", m.getProperty(MessageConst.PROPERTY_RETRY_TOPIC));
            record.put("systemProperties", systemPropertyNames(m));
            record.put("originMessageId", deliveries.whichId(index,
                m.getProperty(MessageConst.PROPERTY_ORIGIN_MESSAGE_ID)));
            record.put("uniqKey", deliveries.whichId(index,
                m.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)));
            out.add(record);
        }
        return out;
    }

    private static Set<String> systemPropertyNames(MessageExt m) {
        Set<String> names = new TreeSet<>(m.getProperties().keySet());
        names.removeAll(Records.userProperties(m).keySet());
        return names;
    }
}

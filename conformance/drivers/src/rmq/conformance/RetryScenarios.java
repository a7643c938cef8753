// Scenario of consumption retries: a push consumer whose listener always answers
// RECONSUME_LATER, with setMaxReconsumeTimes(n). Each message comes back through
// %RETRY%<group> (CONSUMER_SEND_MSG_BACK, delay level 3 + reconsume times) n times, then the
// broker moves it to %DLQ%<group>, which a pull consumer reads by queue afterwards.
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
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
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

    /**
     * `count` messages, each consumed 1 + maxReconsumeTimes times (reconsumeTimes seen per
     * index), then found in the DLQ: its route (queues, perm), and per message what it holds.
     */
    static JSONObject deadLetter(Spec spec) throws Exception {
        ConsumerSupport.fastRebalance();
        ConsumerSupport.createTopic(spec, 2);
        int count = spec.integer("count", 4);
        int maxReconsume = spec.integer("maxReconsumeTimes", 2);
        DefaultMQProducer producer = ConsumerSupport.startProducer(spec);
        try {
            ConsumerSupport.send(producer, spec.topic(), 0, count, "TagA");
        } finally {
            producer.shutdown();
        }
        Waits.Collector deliveries = new Waits.Collector();
        DefaultMQPushConsumer consumer = spec.pushConsumer(spec.group());
        consumer.subscribe(spec.topic(), "*");
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setMaxReconsumeTimes(maxReconsume);
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            deliveries.addAll(msgs);
            return ConsumeConcurrentlyStatus.RECONSUME_LATER;
        });
        String dlq = MixAll.getDLQTopic(spec.group());
        consumer.start();
        try {
            Waits.until(() -> deliveries.size() >= count * (1 + maxReconsume),
                spec.seconds("timeout", 40));
            JSONObject out = new JSONObject(true);
            out.put("dlq", readDeadLetters(spec, dlq, count, deliveries.snapshot()));
            out.put("dlqRoute", route(spec, dlq));
            out.put("retryRoute", route(spec, MixAll.getRetryTopic(spec.group())));
            // Read last, so that a wrong extra delivery had the DLQ read's time to show.
            out.put("deliveries", reconsumeTimesByIndex(deliveries.snapshot()));
            Set<String> topics = new TreeSet<>();
            for (MessageExt m : deliveries.snapshot()) {
                topics.add(m.getTopic());
            }
            out.put("deliveredTopics", topics);
            return out;
        } finally {
            consumer.shutdown();
        }
    }

    private static JSONObject reconsumeTimesByIndex(List<MessageExt> deliveries) {
        Map<Integer, List<Integer>> byIndex = new TreeMap<>();
        for (MessageExt m : deliveries) {
            byIndex.computeIfAbsent(ConsumerSupport.index(m), i -> new ArrayList<>())
                .add(m.getReconsumeTimes());
        }
        JSONObject out = new JSONObject(true);
        for (Map.Entry<Integer, List<Integer>> e : byIndex.entrySet()) {
            e.getValue().sort(Integer::compare);
            out.put(Integer.toString(e.getKey()), e.getValue());
        }
        return out;
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
     * record, the system properties it carries (names), RETRY_TOPIC, and whether its
     * ORIGIN_MESSAGE_ID / UNIQ_KEY are those of the message first delivered.
     */
    @SuppressWarnings("deprecation")
    private static JSONArray readDeadLetters(Spec spec, String dlq, int count,
        List<MessageExt> deliveries) throws Exception {
        Map<Integer, MessageExt> firstDelivery = new TreeMap<>();
        for (MessageExt m : deliveries) {
            if (m.getReconsumeTimes() == 0) {
                firstDelivery.putIfAbsent(ConsumerSupport.index(m), m);
            }
        }
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
            JSONObject record = Records.record(m);
            record.put("queueId", m.getQueueId());
            record.put("RETRY_TOPIC", m.getProperty(MessageConst.PROPERTY_RETRY_TOPIC));
            record.put("systemProperties", systemPropertyNames(m));
            MessageExt first = firstDelivery.get(ConsumerSupport.index(m));
            if (first instanceof MessageClientExt) {
                record.put("originIsFirstStored", ((MessageClientExt) first).getOffsetMsgId()
                    .equals(m.getProperty(MessageConst.PROPERTY_ORIGIN_MESSAGE_ID)));
                record.put("uniqKeyKept", first.getProperty(
                    MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX).equals(
                    m.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)));
            }
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

// What the consumer-side scenarios (Push*, Retry*, Lite*, Pull*) share: short client intervals,
// numbered sends (to a queue the scenario chose, or wherever the producer puts them), push
// consumers that collect everything from the first offset, the queues a push consumer holds
// after rebalance, and what a broker says about a group's committed offsets
// (GET_CONSUME_STATS through the admin API).
package rmq.conformance;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.admin.ConsumeStats;
import org.apache.rocketmq.common.admin.OffsetWrapper;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

final class ConsumerSupport {
    private ConsumerSupport() {
    }

    /**
     * Rebalance every second instead of every 20 s. RebalanceService reads the property once,
     * when the first client instance is built: call this before any client starts.
     */
    static void fastRebalance() {
        System.setProperty("rocketmq.client.rebalance.waitInterval", "1000");
    }

    /**
     * Wait `millis` after the expected messages arrived, so that wrong extra deliveries (a
     * message twice, one a filter should have kept back) have the time to show.
     */
    static void settle(long millis) throws InterruptedException {
        Thread.sleep(millis);
    }

    /** Create the spec's topic with `queues` (spec "queues", else `otherwise`) queues. */
    static int createTopic(Spec spec, int otherwise) throws Exception {
        int queues = spec.integer("queues", otherwise);
        spec.createTopic(spec.topic(), queues);
        return queues;
    }

    /** The start of a push consumer scenario: fastRebalance, then createTopic. */
    static int prepare(Spec spec, int otherwise) throws Exception {
        fastRebalance();
        return createTopic(spec, otherwise);
    }

    /** send(...) `from` .. `from + count - 1` to the spec's topic through a producer of its own. */
    static void sendNumbered(Spec spec, int from, int count, String tags) throws Exception {
        DefaultMQProducer producer = spec.startedProducer();
        try {
            send(producer, spec.topic(), from, count, tags);
        } finally {
            producer.shutdown();
        }
    }

    /**
     * Have a (subscribed, not started) push consumer start from the first offset and hand
     * everything it gets to `into`, each message consumed at once (a concurrent listener).
     */
    static DefaultMQPushConsumer collectFromFirst(DefaultMQPushConsumer consumer,
        Waits.Collector into) {
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            into.addAll(msgs);
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        return consumer;
    }

    static void shutdown(List<DefaultMQPushConsumer> consumers) {
        for (DefaultMQPushConsumer consumer : consumers) {
            consumer.shutdown();
        }
    }

    /** Send messages `from` .. `from + count - 1` (Records.numbered) wherever the producer puts them. */
    static void send(DefaultMQProducer producer, String topic, int from, int count, String tags)
        throws Exception {
        for (int i = from; i < from + count; i++) {
            check(producer.send(Records.numbered(topic, i, tags)));
        }
    }

    /** Send messages `from` .. `from + count - 1` to `queue`. */
    static void sendTo(DefaultMQProducer producer, MessageQueue queue, int from, int count,
        String tags) throws Exception {
        for (int i = from; i < from + count; i++) {
            Message message = Records.numbered(queue.getTopic(), i, tags);
            check(producer.send(message, queue));
        }
    }

    private static void check(SendResult result) {
        if (result.getSendStatus() != SendStatus.SEND_OK) {
            throw new IllegalStateException("send answered " + result.getSendStatus());
        }
    }

    /** Queue `queueId` of `topic` as the producer's route names it. */
    static MessageQueue queue(DefaultMQProducer producer, String topic, int queueId)
        throws Exception {
        for (MessageQueue queue : producer.fetchPublishMessageQueues(topic)) {
            if (queue.getQueueId() == queueId) {
                return queue;
            }
        }
        throw new IllegalStateException("no queue " + queueId + " in the route of " + topic);
    }

    /** The index user property Records.numbered gives every message. */
    static int index(MessageExt message) {
        return Integer.parseInt(message.getUserProperty("index"));
    }

    /** Indexes of `messages`, sorted. */
    static JSONArray indexes(Collection<MessageExt> messages) {
        List<Integer> out = new ArrayList<>();
        for (MessageExt m : messages) {
            out.add(index(m));
        }
        out.sort(Integer::compare);
        return new JSONArray(new ArrayList<>(out));
    }

    /** Messages received more than once (by index). */
    static int duplicates(Collection<MessageExt> messages) {
        Set<Integer> seen = new HashSet<>();
        int twice = 0;
        for (MessageExt m : messages) {
            if (!seen.add(index(m))) {
                twice++;
            }
        }
        return twice;
    }

    /** The queues of `topic` a push consumer holds now (its rebalance's process queues). */
    static Set<Integer> held(DefaultMQPushConsumer consumer, String topic) {
        Set<Integer> ids = new TreeSet<>();
        for (MessageQueue queue : consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl()
            .getProcessQueueTable().keySet()) {
            if (queue.getTopic().equals(topic)) {
                ids.add(queue.getQueueId());
            }
        }
        return ids;
    }

    /**
     * Wait until every push consumer holds some queues of `topic` and together they hold each
     * of its `queues` queues once (the rebalance after the last one joined has settled).
     */
    static boolean awaitSplit(List<DefaultMQPushConsumer> consumers, String topic, int queues,
        long timeoutMillis) throws InterruptedException {
        return Waits.until(() -> {
            Set<Integer> all = new HashSet<>();
            int total = 0;
            for (DefaultMQPushConsumer consumer : consumers) {
                Set<Integer> mine = held(consumer, topic);
                if (mine.isEmpty()) {
                    return false;
                }
                total += mine.size();
                all.addAll(mine);
            }
            return total == queues && all.size() == queues;
        }, timeoutMillis);
    }

    /** Commit `offset` for `group` on `queue` at its master through the admin API (UPDATE_CONSUMER_OFFSET). */
    static void commitOffset(Spec spec, String group, MessageQueue queue, long offset) throws Exception {
        DefaultMQAdminExt admin = spec.admin();
        try {
            String master = admin.examineBrokerClusterInfo().getBrokerAddrTable()
                .get(queue.getBrokerName()).getBrokerAddrs().get(0L);
            admin.updateConsumeOffset(master, group, queue, offset);
        } finally {
            admin.shutdown();
        }
    }

    /** The broker's consume stats of `group` on `topic`: queue id -> [broker offset, consumer offset]. */
    static Map<Integer, long[]> consumeStats(DefaultMQAdminExt admin, String group, String topic)
        throws Exception {
        ConsumeStats stats = admin.examineConsumeStats(group);
        Map<Integer, long[]> out = new TreeMap<>();
        for (Map.Entry<MessageQueue, OffsetWrapper> e : stats.getOffsetTable().entrySet()) {
            if (e.getKey().getTopic().equals(topic)) {
                OffsetWrapper w = e.getValue();
                out.put(e.getKey().getQueueId(), new long[] {w.getBrokerOffset(), w.getConsumerOffset()});
            }
        }
        return out;
    }

    /**
     * Wait until the broker's consume stats show `group` committed everything of `topic`
     * (consumer offset = broker offset in each of its `queues` queues). Returns "committedAll"
     * and "consumerOffsets" (sorted) as last seen.
     */
    static JSONObject awaitCommitted(Spec spec, String group, String topic, int queues)
        throws Exception {
        DefaultMQAdminExt admin = spec.admin();
        try {
            AtomicReference<Map<Integer, long[]>> last = new AtomicReference<>(new TreeMap<>());
            boolean all = Waits.until(() -> {
                try {
                    last.set(consumeStats(admin, group, topic));
                } catch (Exception e) {
                    return false;
                }
                Map<Integer, long[]> stats = last.get();
                return stats.size() == queues
                    && stats.values().stream().allMatch(o -> o[0] == o[1]);
            }, spec.seconds("commitTimeout", 30));
            List<Long> offsets = new ArrayList<>();
            for (long[] o : last.get().values()) {
                offsets.add(o[1]);
            }
            offsets.sort(Long::compare);
            JSONObject out = new JSONObject();
            out.put("committedAll", all);
            out.put("consumerOffsets", offsets);
            return out;
        } finally {
            admin.shutdown();
        }
    }
}

// Scenarios of DefaultMQPushConsumer: concurrent and orderly listeners, two consumers of one
// group sharing the queues (clustering) or each getting everything (broadcasting), tag and
// SQL92 subscriptions, and where a new group starts (first / last offset / timestamp).
// Results hold only what is deterministic: indexes of the numbered messages (sorted unless
// order is the point), counts, and per-queue facts for queues the scenario chose itself.
package rmq.conformance;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.text.SimpleDateFormat;
import java.util.ArrayList;
import java.util.Date;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.impl.consumer.ProcessQueue;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.heartbeat.MessageModel;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

final class PushScenarios {
    private PushScenarios() {
    }

    /** A push consumer of `group` on the spec's topic, collecting into `into`, not started. */
    static DefaultMQPushConsumer collecting(Spec spec, String group, String expression,
        Waits.Collector into) throws Exception {
        DefaultMQPushConsumer consumer = spec.pushConsumer(group);
        consumer.subscribe(spec.topic(), expression);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            into.addAll(msgs);
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        return consumer;
    }

    private static void shutdown(List<DefaultMQPushConsumer> consumers) {
        for (DefaultMQPushConsumer consumer : consumers) {
            consumer.shutdown();
        }
    }

    /**
     * One consumer started before the sends (long polling wakes it): everything arrives once,
     * and after its shutdown the broker's consume stats show every queue committed.
     */
    static JSONObject concurrently(Spec spec) throws Exception {
        ConsumerSupport.fastRebalance();
        int queues = ConsumerSupport.createTopic(spec, 4);
        int count = spec.integer("count", 20);
        Waits.Collector collector = new Waits.Collector();
        DefaultMQPushConsumer consumer = collecting(spec, spec.group(), "*", collector);
        consumer.start();
        try {
            boolean held = Waits.until(
                () -> ConsumerSupport.held(consumer, spec.topic()).size() == queues, 30_000);
            DefaultMQProducer producer = ConsumerSupport.startProducer(spec);
            try {
                ConsumerSupport.send(producer, spec.topic(), 0, count, "TagA,TagB");
            } finally {
                producer.shutdown();
            }
            List<MessageExt> received = collector.await(count, spec.seconds("timeout", 30), 500);
            JSONObject out = Waits.Collector.summary(received);
            out.put("heldAllQueues", held);
            out.put("duplicates", ConsumerSupport.duplicates(received));
            out.put("denseOffsets", Records.denseOffsets(received));
            // Shutdown persists the offsets (UPDATE_CONSUMER_OFFSET); the client's own persist
            // task first runs 10 s after start.
            consumer.shutdown();
            out.putAll(ConsumerSupport.awaitCommitted(spec, spec.group(), spec.topic(), queues));
            return out;
        } finally {
            consumer.shutdown();
        }
    }

    /**
     * Messages sent to queue index % queues, consumed by an orderly listener: per queue the
     * indexes in consumption order, whether they came in queue-offset order, whether two
     * threads ever consumed one queue at once, and how many queues the broker let it lock.
     */
    static JSONObject orderly(Spec spec) throws Exception {
        ConsumerSupport.fastRebalance();
        int queues = ConsumerSupport.createTopic(spec, 4);
        int count = spec.integer("count", 40);
        DefaultMQProducer producer = ConsumerSupport.startProducer(spec);
        try {
            List<MessageQueue> targets = new ArrayList<>();
            for (int q = 0; q < queues; q++) {
                targets.add(ConsumerSupport.queue(producer, spec.topic(), q));
            }
            for (int i = 0; i < count; i++) {
                producer.send(Records.numbered(spec.topic(), i, "TagA"), targets.get(i % queues));
            }
        } finally {
            producer.shutdown();
        }
        Map<Integer, List<Integer>> indexes = new TreeMap<>();
        Map<Integer, List<Long>> offsets = new TreeMap<>();
        Map<Integer, Integer> busy = new HashMap<>();
        AtomicBoolean overlapped = new AtomicBoolean();
        Waits.Collector collector = new Waits.Collector();
        DefaultMQPushConsumer consumer = spec.pushConsumer(spec.group());
        consumer.subscribe(spec.topic(), "*");
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setConsumeThreadMin(4);
        consumer.setConsumeThreadMax(4);
        consumer.registerMessageListener((MessageListenerOrderly) (msgs, context) -> {
            int queue = context.getMessageQueue().getQueueId();
            synchronized (busy) {
                if (busy.merge(queue, 1, Integer::sum) > 1) {
                    overlapped.set(true);
                }
                for (MessageExt m : msgs) {
                    indexes.computeIfAbsent(queue, q -> new ArrayList<>()).add(ConsumerSupport.index(m));
                    offsets.computeIfAbsent(queue, q -> new ArrayList<>()).add(m.getQueueOffset());
                }
            }
            collector.addAll(msgs);
            synchronized (busy) {
                busy.merge(queue, -1, Integer::sum);
            }
            return ConsumeOrderlyStatus.SUCCESS;
        });
        consumer.start();
        try {
            List<MessageExt> received = collector.await(count, spec.seconds("timeout", 30), 500);
            int locked = 0;
            for (Map.Entry<MessageQueue, ProcessQueue> e : consumer.getDefaultMQPushConsumerImpl()
                .getRebalanceImpl().getProcessQueueTable().entrySet()) {
                if (e.getKey().getTopic().equals(spec.topic()) && e.getValue().isLocked()) {
                    locked++;
                }
            }
            JSONObject out = new JSONObject();
            out.put("count", received.size());
            out.put("lockedQueues", locked);
            out.put("overlapped", overlapped.get());
            JSONObject perQueue = new JSONObject(true);
            JSONObject inOrder = new JSONObject(true);
            synchronized (busy) {
                for (Map.Entry<Integer, List<Integer>> e : indexes.entrySet()) {
                    perQueue.put(Integer.toString(e.getKey()), e.getValue());
                    List<Long> seen = offsets.get(e.getKey());
                    boolean ordered = true;
                    for (int i = 0; i < seen.size(); i++) {
                        ordered &= seen.get(i) == i;
                    }
                    inOrder.put(Integer.toString(e.getKey()), ordered);
                }
            }
            out.put("perQueue", perQueue);
            out.put("inOrder", inOrder);
            return out;
        } finally {
            consumer.shutdown();
        }
    }

    /**
     * Two consumers of one group: once rebalance split the queues between them, messages sent
     * are each consumed exactly once, by whichever consumer holds its queue.
     */
    static JSONObject clustering(Spec spec) throws Exception {
        ConsumerSupport.fastRebalance();
        int queues = ConsumerSupport.createTopic(spec, 4);
        int count = spec.integer("count", 20);
        List<Waits.Collector> collectors = List.of(new Waits.Collector(), new Waits.Collector());
        List<DefaultMQPushConsumer> consumers = new ArrayList<>();
        try {
            for (Waits.Collector collector : collectors) {
                DefaultMQPushConsumer consumer = collecting(spec, spec.group(), "*", collector);
                consumers.add(consumer);
                consumer.start();
            }
            boolean split = ConsumerSupport.awaitSplit(consumers, spec.topic(), queues, 30_000);
            DefaultMQAdminExt admin = spec.admin();
            int members;
            try {
                members = admin.examineConsumerConnectionInfo(spec.group()).getConnectionSet().size();
            } finally {
                admin.shutdown();
            }
            List<Integer> held = new ArrayList<>();
            for (DefaultMQPushConsumer consumer : consumers) {
                held.add(ConsumerSupport.held(consumer, spec.topic()).size());
            }
            DefaultMQProducer producer = ConsumerSupport.startProducer(spec);
            try {
                ConsumerSupport.send(producer, spec.topic(), 0, count, "TagA");
            } finally {
                producer.shutdown();
            }
            Waits.until(() -> collectors.get(0).size() + collectors.get(1).size() >= count,
                spec.seconds("timeout", 30));
            ConsumerSupport.settle(500);
            List<MessageExt> all = new ArrayList<>();
            List<Integer> counts = new ArrayList<>();
            for (Waits.Collector collector : collectors) {
                List<MessageExt> mine = collector.snapshot();
                counts.add(mine.size());
                all.addAll(mine);
            }
            held.sort(Integer::compare);
            counts.sort(Integer::compare);
            JSONObject out = new JSONObject();
            out.put("split", split);
            out.put("consumersInGroup", members);
            out.put("queuesHeld", held);
            out.put("countsPerConsumer", counts);
            out.put("received", ConsumerSupport.indexes(all));
            out.put("duplicates", ConsumerSupport.duplicates(all));
            return out;
        } finally {
            shutdown(consumers);
        }
    }

    /** Two broadcasting consumers of one group: each holds every queue and gets every message. */
    static JSONObject broadcasting(Spec spec) throws Exception {
        ConsumerSupport.fastRebalance();
        int queues = ConsumerSupport.createTopic(spec, 4);
        int count = spec.integer("count", 20);
        List<Waits.Collector> collectors = List.of(new Waits.Collector(), new Waits.Collector());
        List<DefaultMQPushConsumer> consumers = new ArrayList<>();
        try {
            for (Waits.Collector collector : collectors) {
                DefaultMQPushConsumer consumer = collecting(spec, spec.group(), "*", collector);
                consumer.setMessageModel(MessageModel.BROADCASTING);
                consumers.add(consumer);
                consumer.start();
            }
            boolean held = Waits.until(() -> consumers.stream().allMatch(
                c -> ConsumerSupport.held(c, spec.topic()).size() == queues), 30_000);
            DefaultMQProducer producer = ConsumerSupport.startProducer(spec);
            try {
                ConsumerSupport.send(producer, spec.topic(), 0, count, "TagA");
            } finally {
                producer.shutdown();
            }
            JSONArray received = new JSONArray();
            for (Waits.Collector collector : collectors) {
                received.add(ConsumerSupport.indexes(
                    collector.await(count, spec.seconds("timeout", 30), 0)));
            }
            ConsumerSupport.settle(500);
            JSONArray counts = new JSONArray();
            for (Waits.Collector collector : collectors) {
                counts.add(collector.size());
            }
            JSONObject out = new JSONObject();
            out.put("eachHeldAllQueues", held);
            out.put("received", received);
            out.put("counts", counts);
            return out;
        } finally {
            shutdown(consumers);
        }
    }

    /** Messages tagged TagA, TagB, TagC in turn; one group per expression of spec "expressions". */
    static JSONObject tags(Spec spec) throws Exception {
        ConsumerSupport.fastRebalance();
        ConsumerSupport.createTopic(spec, 4);
        int count = spec.integer("count", 30);
        DefaultMQProducer producer = ConsumerSupport.startProducer(spec);
        try {
            ConsumerSupport.send(producer, spec.topic(), 0, count, "TagA,TagB,TagC");
        } finally {
            producer.shutdown();
        }
        JSONObject expected = spec.json.getJSONObject("expressions");
        Map<String, Waits.Collector> collectors = new TreeMap<>();
        List<DefaultMQPushConsumer> consumers = new ArrayList<>();
        try {
            int n = 0;
            for (String expression : expected.keySet()) {
                Waits.Collector collector = new Waits.Collector();
                collectors.put(expression, collector);
                DefaultMQPushConsumer consumer =
                    collecting(spec, spec.group() + "-" + n++, expression, collector);
                consumers.add(consumer);
                consumer.start();
            }
            Waits.until(() -> collectors.entrySet().stream().allMatch(
                e -> e.getValue().size() >= expected.getIntValue(e.getKey())),
                spec.seconds("timeout", 30));
            ConsumerSupport.settle(1000);
            JSONObject out = new JSONObject(true);
            for (Map.Entry<String, Waits.Collector> e : collectors.entrySet()) {
                out.put(e.getKey(), ConsumerSupport.indexes(e.getValue().snapshot()));
            }
            return out;
        } finally {
            shutdown(consumers);
        }
    }

    /** A MessageSelector.bySql subscription on the user properties index and parity. */
    static JSONObject sql92(Spec spec) throws Exception {
        ConsumerSupport.fastRebalance();
        ConsumerSupport.createTopic(spec, 4);
        int count = spec.integer("count", 20);
        DefaultMQProducer producer = ConsumerSupport.startProducer(spec);
        try {
            ConsumerSupport.send(producer, spec.topic(), 0, count, "TagA,TagB");
        } finally {
            producer.shutdown();
        }
        Waits.Collector collector = new Waits.Collector();
        DefaultMQPushConsumer consumer = spec.pushConsumer(spec.group());
        consumer.subscribe(spec.topic(), MessageSelector.bySql(spec.str("sql")));
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            collector.addAll(msgs);
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        try {
            List<MessageExt> received =
                collector.await(spec.integer("expected", 1), spec.seconds("timeout", 30), 1000);
            JSONObject out = new JSONObject();
            out.put("received", ConsumerSupport.indexes(received));
            return out;
        } finally {
            consumer.shutdown();
        }
    }

    /**
     * Batch 1, then (half a second or more later) a whole-second timestamp T, then batch 2; a
     * new group per ConsumeFromWhere (the timestamp one at T) reports what it received, and
     * searchOffset(T) is compared with the number of batch-1 messages in each queue.
     */
    static JSONObject fromWhere(Spec spec) throws Exception {
        ConsumerSupport.fastRebalance();
        int queues = ConsumerSupport.createTopic(spec, 4);
        int batch = spec.integer("batch", 10);
        Map<Integer, Integer> firstBatch = new TreeMap<>();
        long boundary;
        DefaultMQProducer producer = ConsumerSupport.startProducer(spec);
        try {
            for (int i = 0; i < batch; i++) {
                SendResult sent = producer.send(Records.numbered(spec.topic(), i, "TagA"));
                firstBatch.merge(sent.getMessageQueue().getQueueId(), 1, Integer::sum);
            }
            boundary = (System.currentTimeMillis() + 1500) / 1000 * 1000;
            Waits.until(() -> System.currentTimeMillis() >= boundary, 5000);
            ConsumerSupport.send(producer, spec.topic(), batch, batch, "TagA");
        } finally {
            producer.shutdown();
        }
        Map<String, ConsumeFromWhere> modes = new TreeMap<>();
        modes.put("first", ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        modes.put("last", ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET);
        modes.put("timestamp", ConsumeFromWhere.CONSUME_FROM_TIMESTAMP);
        Map<String, Waits.Collector> collectors = new TreeMap<>();
        List<DefaultMQPushConsumer> consumers = new ArrayList<>();
        try {
            for (Map.Entry<String, ConsumeFromWhere> mode : modes.entrySet()) {
                Waits.Collector collector = new Waits.Collector();
                collectors.put(mode.getKey(), collector);
                DefaultMQPushConsumer consumer =
                    collecting(spec, spec.group() + "-" + mode.getKey(), "*", collector);
                consumer.setConsumeFromWhere(mode.getValue());
                consumer.setConsumeTimestamp(
                    new SimpleDateFormat("yyyyMMddHHmmss").format(new Date(boundary)));
                consumers.add(consumer);
                consumer.start();
            }
            Waits.until(() -> collectors.values().stream().allMatch(c -> c.size() >= 2 * batch),
                spec.seconds("timeout", 30));
            ConsumerSupport.settle(500);
            JSONObject out = new JSONObject(true);
            JSONObject received = new JSONObject(true);
            for (Map.Entry<String, Waits.Collector> e : collectors.entrySet()) {
                received.put(e.getKey(), ConsumerSupport.indexes(e.getValue().snapshot()));
            }
            out.put("received", received);
            DefaultMQPushConsumer any = consumers.get(0);
            boolean matches = true;
            for (MessageQueue queue : any.fetchSubscribeMessageQueues(spec.topic())) {
                long offset = any.searchOffset(queue, boundary);
                matches &= offset == firstBatch.getOrDefault(queue.getQueueId(), 0);
            }
            out.put("searchOffsetAtBoundary", matches);
            return out;
        } finally {
            shutdown(consumers);
        }
    }
}

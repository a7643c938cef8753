// Scenarios of DefaultMQPushConsumer with a concurrent listener: one consumer, two consumers
// of one group sharing the queues (clustering) or each getting everything (broadcasting), tag
// and SQL92 subscriptions, and where a new group starts (first / last offset / timestamp).
// PushOrderly has the orderly listener's scenarios.
// Results hold only what is deterministic: indexes of the numbered messages (sorted unless
// order is the point), counts, and per-queue facts for queues the scenario chose itself.
package rmq.conformance;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.text.SimpleDateFormat;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
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
        return ConsumerSupport.collectFromFirst(consumer, into);
    }

    /**
     * Wait until each collector of `collectors` holds at least as many messages as `expected`
     * names under its key, let extra deliveries show; the indexes each received, by key.
     */
    private static JSONObject awaitIndexes(Spec spec, Map<String, Waits.Collector> collectors,
        JSONObject expected) throws Exception {
        Waits.until(() -> collectors.entrySet().stream().allMatch(
            e -> e.getValue().size() >= expected.getIntValue(e.getKey())),
            spec.seconds("timeout", 30));
        ConsumerSupport.settle(1000);
        JSONObject received = new JSONObject(true);
        for (Map.Entry<String, Waits.Collector> e : collectors.entrySet()) {
            received.put(e.getKey(), ConsumerSupport.indexes(e.getValue().snapshot()));
        }
        return received;
    }

    /**
     * One consumer started before the sends (long polling wakes it): everything arrives once,
     * and after its shutdown the broker's consume stats show every queue committed.
     */
    static JSONObject concurrently(Spec spec) throws Exception {
        int queues = ConsumerSupport.prepare(spec, 4);
        int count = spec.integer("count", 20);
        Waits.Collector collector = new Waits.Collector();
        DefaultMQPushConsumer consumer = collecting(spec, spec.group(), "*", collector);
        consumer.start();
        try {
            boolean held = Waits.until(
                () -> ConsumerSupport.held(consumer, spec.topic()).size() == queues, 30_000);
            ConsumerSupport.sendNumbered(spec, 0, count, "TagA,TagB");
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
     * Two consumers of one group: once rebalance split the queues between them, messages sent
     * are each consumed exactly once, by whichever consumer holds its queue.
     */
    static JSONObject clustering(Spec spec) throws Exception {
        int queues = ConsumerSupport.prepare(spec, 4);
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
            ConsumerSupport.sendNumbered(spec, 0, count, "TagA");
            Waits.until(() -> collectors.get(0).size() + collectors.get(1).size() >= count,
                spec.seconds("timeout", 30));
            ConsumerSupport.settle(500);
            List<Integer> counts = new ArrayList<>();
            for (Waits.Collector collector : collectors) {
                counts.add(collector.size());
            }
            held.sort(Integer::compare);
            counts.sort(Integer::compare);
            JSONObject out = new JSONObject(true);
            out.put("split", split);
            out.put("consumersInGroup", members);
            out.put("queuesHeld", held);
            out.put("countsPerConsumer", counts);
            out.put("received", ConsumerSupport.indexes(all(collectors)));
            out.put("afterOneLeft", afterOneLeft(spec, consumers, collectors, queues, count));
            out.put("duplicates", ConsumerSupport.duplicates(all(collectors)));
            return out;
        } finally {
            ConsumerSupport.shutdown(consumers);
        }
    }

    private static List<MessageExt> all(List<Waits.Collector> collectors) {
        List<MessageExt> all = new ArrayList<>();
        for (Waits.Collector collector : collectors) {
            all.addAll(collector.snapshot());
        }
        return all;
    }

    /**
     * The second consumer shuts down (persisting its offsets, unregistering): the first must
     * take every queue, from where the second stopped, and get the next `count` messages.
     */
    private static JSONObject afterOneLeft(Spec spec, List<DefaultMQPushConsumer> consumers,
        List<Waits.Collector> collectors, int queues, int count) throws Exception {
        DefaultMQPushConsumer survivor = consumers.get(0);
        Waits.Collector survived = collectors.get(0);
        consumers.get(1).shutdown();
        JSONObject out = new JSONObject(true);
        out.put("survivorHeldAll", Waits.until(
            () -> ConsumerSupport.held(survivor, spec.topic()).size() == queues, 30_000));
        int before = survived.size();
        ConsumerSupport.sendNumbered(spec, count, count, "TagA");
        Waits.until(() -> survived.size() >= before + count, spec.seconds("timeout", 30));
        ConsumerSupport.settle(500);
        List<MessageExt> later = survived.snapshot().subList(before, survived.size());
        out.put("survivorReceived", ConsumerSupport.indexes(later));
        return out;
    }

    /** Two broadcasting consumers of one group: each holds every queue and gets every message. */
    static JSONObject broadcasting(Spec spec) throws Exception {
        int queues = ConsumerSupport.prepare(spec, 4);
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
            ConsumerSupport.sendNumbered(spec, 0, count, "TagA");
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
            ConsumerSupport.shutdown(consumers);
        }
    }

    /** Messages tagged TagA, TagB, TagC in turn; one group per expression of spec "expressions". */
    static JSONObject tags(Spec spec) throws Exception {
        ConsumerSupport.prepare(spec, 4);
        int count = spec.integer("count", 30);
        ConsumerSupport.sendNumbered(spec, 0, count, "TagA,TagB,TagC");
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
            return awaitIndexes(spec, collectors, expected);
        } finally {
            ConsumerSupport.shutdown(consumers);
        }
    }

    /** A MessageSelector.bySql subscription on the user properties index and parity. */
    static JSONObject sql92(Spec spec) throws Exception {
        ConsumerSupport.prepare(spec, 4);
        int count = spec.integer("count", 20);
        ConsumerSupport.sendNumbered(spec, 0, count, "TagA,TagB");
        Waits.Collector collector = new Waits.Collector();
        DefaultMQPushConsumer consumer = spec.pushConsumer(spec.group());
        consumer.subscribe(spec.topic(), MessageSelector.bySql(spec.str("sql")));
        ConsumerSupport.collectFromFirst(consumer, collector).start();
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
     * Batch 1, then (at least a second later) a whole-second timestamp T, then batch 2. Spec
     * "expected" names the consumers (each a new group) and how many messages to wait for:
     * "[between-][broadcast-](first|last|timestamp)"; a between- consumer starts after batch 1
     * and holds its queues before batch 2 is sent, the others start after batch 2; broadcast-
     * ones keep their offsets locally, so only they apply ConsumeFromWhere on a fresh topic
     * (clustering ones ask the broker, which answers offset 0). Timestamp consumers start at T.
     * searchOffset (SEARCH_OFFSET_BY_TIMESTAMP) is probed per queue at times whose answer
     * follows from the counts sent to each queue: the message stored nearest in time.
     */
    static JSONObject fromWhere(Spec spec) throws Exception {
        int queues = ConsumerSupport.prepare(spec, 4);
        int batch = spec.integer("batch", 10);
        JSONObject expected = spec.json.getJSONObject("expected");
        Map<Integer, Integer> firstBatch = new TreeMap<>();
        Map<Integer, Integer> total = new TreeMap<>();
        Map<String, Waits.Collector> collectors = new TreeMap<>();
        List<DefaultMQPushConsumer> consumers = new ArrayList<>();
        DefaultMQProducer producer = spec.startedProducer();
        try {
            sendCounting(producer, spec.topic(), 0, batch, firstBatch, total);
            long batch1End = System.currentTimeMillis();
            long boundary = (batch1End + 2000) / 1000 * 1000;
            List<DefaultMQPushConsumer> between = new ArrayList<>();
            for (String name : expected.keySet()) {
                if (name.startsWith("between-")) {
                    between.add(startFrom(spec, name, boundary, collectors, consumers));
                }
            }
            boolean held = Waits.until(() -> between.stream().allMatch(
                c -> ConsumerSupport.held(c, spec.topic()).size() == queues), 30_000);
            Waits.until(() -> System.currentTimeMillis() >= boundary, 5000);
            sendCounting(producer, spec.topic(), batch, batch, null, total);
            for (String name : expected.keySet()) {
                if (!name.startsWith("between-")) {
                    startFrom(spec, name, boundary, collectors, consumers);
                }
            }
            JSONObject received = awaitIndexes(spec, collectors, expected);
            JSONObject out = new JSONObject(true);
            out.put("betweenHeldQueues", held);
            out.put("received", received);
            Map<String, Long> probes = new TreeMap<>();
            probes.put("beforeAll", 0L);
            probes.put("justAfterBatch1", batch1End + 20);
            probes.put("boundary", boundary);
            probes.put("afterAll", System.currentTimeMillis() + 3_600_000L);
            out.put("searchOffsetNearest",
                probeSearchOffset(consumers.get(0), spec.topic(), probes, firstBatch, total));
            return out;
        } finally {
            producer.shutdown();
            ConsumerSupport.shutdown(consumers);
        }
    }

    private static void sendCounting(DefaultMQProducer producer, String topic, int from,
        int count, Map<Integer, Integer> inBatch, Map<Integer, Integer> total) throws Exception {
        for (int i = from; i < from + count; i++) {
            int queue = producer.send(Records.numbered(topic, i, "TagA")).getMessageQueue()
                .getQueueId();
            total.merge(queue, 1, Integer::sum);
            if (inBatch != null) {
                inBatch.merge(queue, 1, Integer::sum);
            }
        }
    }

    /** Start the consumer `name` describes (see fromWhere), collecting into `collectors`. */
    private static DefaultMQPushConsumer startFrom(Spec spec, String name, long timestamp,
        Map<String, Waits.Collector> collectors, List<DefaultMQPushConsumer> consumers)
        throws Exception {
        Waits.Collector collector = new Waits.Collector();
        collectors.put(name, collector);
        DefaultMQPushConsumer consumer =
            collecting(spec, spec.group() + "-" + name, "*", collector);
        if (name.contains("broadcast-")) {
            consumer.setMessageModel(MessageModel.BROADCASTING);
        }
        String where = name.substring(name.lastIndexOf('-') + 1);
        switch (where) {
            case "first":
                consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
                break;
            case "last":
                consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET);
                break;
            case "timestamp":
                consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_TIMESTAMP);
                consumer.setConsumeTimestamp(
                    new SimpleDateFormat("yyyyMMddHHmmss").format(new Date(timestamp)));
                break;
            default:
                throw new IllegalArgumentException("unknown consumer " + name);
        }
        consumers.add(consumer);
        consumer.start();
        return consumer;
    }

    /** Per probe: whether searchOffset answered the expected offset in every queue. */
    private static JSONObject probeSearchOffset(DefaultMQPushConsumer consumer, String topic,
        Map<String, Long> probes, Map<Integer, Integer> firstBatch, Map<Integer, Integer> total)
        throws Exception {
        JSONObject searched = new JSONObject(true);
        for (Map.Entry<String, Long> probe : probes.entrySet()) {
            boolean matches = true;
            for (MessageQueue queue : consumer.fetchSubscribeMessageQueues(topic)) {
                int id = queue.getQueueId();
                long expected;
                switch (probe.getKey()) {
                    case "beforeAll":
                        expected = 0;
                        break;
                    case "justAfterBatch1":
                        expected = Math.max(firstBatch.getOrDefault(id, 0) - 1, 0);
                        break;
                    case "boundary":
                        expected = firstBatch.getOrDefault(id, 0);
                        break;
                    default:
                        expected = Math.max(total.getOrDefault(id, 0) - 1, 0);
                }
                matches &= consumer.searchOffset(queue, probe.getValue()) == expected;
            }
            searched.put(probe.getKey(), matches);
        }
        return searched;
    }
}

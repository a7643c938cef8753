// Scenarios of DefaultMQPushConsumer with an orderly listener (MessageListenerOrderly): the
// messages go to queue index % queues (the scenario chooses, so queue ids are deterministic);
// per queue the consumer must see them in queue-offset order, never on two threads at once,
// and only after the broker granted it the queue's lock (LOCK_BATCH_MQ). With two consumers
// of one group the broker's locks split the queues, and a lock another client holds is refused.
package rmq.conformance;

import com.alibaba.fastjson.JSONObject;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.impl.consumer.ProcessQueue;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

final class PushOrderly {
    private PushOrderly() {
    }

    /** What an orderly listener saw, per queue, and whether two threads ever overlapped. */
    static final class OrderlyLog {
        private final Map<Integer, List<Integer>> indexes = new TreeMap<>();
        private final Map<Integer, List<Long>> offsets = new TreeMap<>();
        private final Map<Integer, Integer> busy = new HashMap<>();
        private boolean overlapped;
        final Waits.Collector collector = new Waits.Collector();

        MessageListenerOrderly listener() {
            return (msgs, context) -> {
                int queue = context.getMessageQueue().getQueueId();
                synchronized (this) {
                    overlapped |= busy.merge(queue, 1, Integer::sum) > 1;
                    for (MessageExt m : msgs) {
                        indexes.computeIfAbsent(queue, q -> new ArrayList<>())
                            .add(ConsumerSupport.index(m));
                        offsets.computeIfAbsent(queue, q -> new ArrayList<>()).add(m.getQueueOffset());
                    }
                }
                collector.addAll(msgs);
                synchronized (this) {
                    busy.merge(queue, -1, Integer::sum);
                }
                return ConsumeOrderlyStatus.SUCCESS;
            };
        }

        /** "perQueue" (indexes in consumption order), "inOrder" (offsets 0, 1, 2, ...), "overlapped". */
        synchronized JSONObject describe() {
            JSONObject perQueue = new JSONObject(true);
            JSONObject inOrder = new JSONObject(true);
            for (Map.Entry<Integer, List<Integer>> e : indexes.entrySet()) {
                perQueue.put(Integer.toString(e.getKey()), e.getValue());
                List<Long> seen = offsets.get(e.getKey());
                boolean ordered = true;
                for (int i = 0; i < seen.size(); i++) {
                    ordered &= seen.get(i) == i;
                }
                inOrder.put(Integer.toString(e.getKey()), ordered);
            }
            JSONObject out = new JSONObject(true);
            out.put("perQueue", perQueue);
            out.put("inOrder", inOrder);
            out.put("overlapped", overlapped);
            return out;
        }
    }

    private static DefaultMQPushConsumer orderlyConsumer(Spec spec, OrderlyLog log)
        throws Exception {
        DefaultMQPushConsumer consumer = spec.pushConsumer(spec.group());
        consumer.subscribe(spec.topic(), "*");
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setConsumeThreadMin(4);
        consumer.setConsumeThreadMax(4);
        consumer.registerMessageListener(log.listener());
        return consumer;
    }

    /** Send `count` messages, message i to queue i % queues. */
    private static void sendRoundRobin(Spec spec, int queues, int count) throws Exception {
        DefaultMQProducer producer = spec.startedProducer();
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
    }

    /** The queues of `topic` the consumer holds whose process queue is locked. */
    private static int locked(DefaultMQPushConsumer consumer, String topic) {
        int locked = 0;
        for (Map.Entry<MessageQueue, ProcessQueue> e : consumer.getDefaultMQPushConsumerImpl()
            .getRebalanceImpl().getProcessQueueTable().entrySet()) {
            if (e.getKey().getTopic().equals(topic) && e.getValue().isLocked()) {
                locked++;
            }
        }
        return locked;
    }

    /** One orderly consumer started after the sends. */
    static JSONObject single(Spec spec) throws Exception {
        int queues = ConsumerSupport.prepare(spec, 4);
        int count = spec.integer("count", 40);
        sendRoundRobin(spec, queues, count);
        OrderlyLog log = new OrderlyLog();
        DefaultMQPushConsumer consumer = orderlyConsumer(spec, log);
        consumer.start();
        try {
            List<MessageExt> received = log.collector.await(count, spec.seconds("timeout", 30), 500);
            JSONObject out = log.describe();
            out.put("count", received.size());
            out.put("lockedQueues", locked(consumer, spec.topic()));
            return out;
        } finally {
            consumer.shutdown();
        }
    }

    /**
     * Two orderly consumers of one group, started before the sends: once each holds (and has
     * locked) its share, the messages are consumed once each, in order per queue; then the
     * second consumer asks for the lock of a queue the first holds and must be refused.
     */
    static JSONObject clustering(Spec spec) throws Exception {
        int queues = ConsumerSupport.prepare(spec, 4);
        int count = spec.integer("count", 40);
        OrderlyLog log = new OrderlyLog();
        List<DefaultMQPushConsumer> consumers = new ArrayList<>();
        try {
            for (int i = 0; i < 2; i++) {
                DefaultMQPushConsumer consumer = orderlyConsumer(spec, log);
                consumers.add(consumer);
                consumer.start();
            }
            // Settled: each consumer holds and has locked its even share (a moment where one
            // still holds three queues and the other one also adds up to four).
            int share = queues / consumers.size();
            boolean split = ConsumerSupport.awaitSplit(consumers, spec.topic(), queues, 30_000)
                && Waits.until(() -> consumers.stream().allMatch(c ->
                    ConsumerSupport.held(c, spec.topic()).size() == share
                        && locked(c, spec.topic()) == share), 30_000);
            List<Integer> lockedPerConsumer = new ArrayList<>();
            for (DefaultMQPushConsumer consumer : consumers) {
                lockedPerConsumer.add(locked(consumer, spec.topic()));
            }
            lockedPerConsumer.sort(Integer::compare);
            sendRoundRobin(spec, queues, count);
            List<MessageExt> received = log.collector.await(count, spec.seconds("timeout", 30), 500);
            JSONObject out = log.describe();
            out.put("splitAndLocked", split);
            out.put("lockedPerConsumer", lockedPerConsumer);
            out.put("count", received.size());
            out.put("duplicates", ConsumerSupport.duplicates(received));
            MessageQueue theirs = consumers.get(0).getDefaultMQPushConsumerImpl().getRebalanceImpl()
                .getProcessQueueTable().keySet().stream()
                .filter(q -> q.getTopic().equals(spec.topic())).findFirst().orElseThrow();
            boolean mine = new HashSet<>(consumers.get(1).getDefaultMQPushConsumerImpl()
                .getRebalanceImpl().getProcessQueueTable().keySet()).contains(theirs);
            out.put("foreignLockGranted",
                !mine && consumers.get(1).getDefaultMQPushConsumerImpl().getRebalanceImpl().lock(theirs));
            return out;
        } finally {
            ConsumerSupport.shutdown(consumers);
        }
    }
}

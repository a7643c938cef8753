// Scenarios of DefaultLitePullConsumer: subscribe mode (poll everything, commit, and a second
// consumer of the group resumes where the first stopped) and assign mode (seek into a queue,
// seekToEnd, offsetForTimestamp, commit with persist), with the committed offsets checked
// in the broker's consume stats.
package rmq.conformance;

import com.alibaba.fastjson.JSONObject;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

final class LiteScenarios {
    private LiteScenarios() {
    }

    /** Poll until `count` messages came (or the timeout), then poll `settleMillis` more. */
    static List<MessageExt> pollUntil(DefaultLitePullConsumer consumer, int count,
        long timeoutMillis, long settleMillis) {
        List<MessageExt> received = new ArrayList<>();
        long deadline = System.currentTimeMillis() + timeoutMillis;
        while (received.size() < count && System.currentTimeMillis() < deadline) {
            received.addAll(consumer.poll(200));
        }
        long settled = System.currentTimeMillis() + settleMillis;
        while (System.currentTimeMillis() < settled) {
            received.addAll(consumer.poll(100));
        }
        return received;
    }

    private static DefaultLitePullConsumer subscribed(Spec spec) throws Exception {
        DefaultLitePullConsumer consumer = spec.litePullConsumer(spec.group());
        consumer.setAutoCommit(false);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(spec.topic(), "*");
        consumer.start();
        return consumer;
    }

    /**
     * Subscribe mode: poll all `count` messages, commit them with persist; the broker's stats
     * then show the offsets; `more` messages sent after the consumer shut down reach a second
     * consumer of the group, and only they.
     */
    static JSONObject subscribe(Spec spec) throws Exception {
        int queues = ConsumerSupport.prepare(spec, 4);
        int count = spec.integer("count", 20);
        int more = spec.integer("more", 4);
        long timeout = spec.seconds("timeout", 30);
        DefaultMQProducer producer = spec.startedProducer();
        try {
            ConsumerSupport.send(producer, spec.topic(), 0, count, "TagA");
            JSONObject out = new JSONObject(true);
            DefaultLitePullConsumer first = subscribed(spec);
            try {
                List<MessageExt> received = pollUntil(first, count, timeout, 500);
                out.put("received", ConsumerSupport.indexes(received));
                out.put("duplicates", ConsumerSupport.duplicates(received));
                // commit(queues, persist) rather than commitSync() and the persist at shutdown:
                // that persists only the queues in the client's rebalance table, and a rebalance
                // whose offset lookup timed out under load (seen with Apache's broker) leaves a
                // queue out of the table while its pull task runs.
                first.commit(first.assignment(), true);
                out.putAll(ConsumerSupport.awaitCommitted(spec, spec.group(), spec.topic(), queues));
            } finally {
                first.shutdown();
            }
            ConsumerSupport.send(producer, spec.topic(), count, more, "TagA");
            DefaultLitePullConsumer second = subscribed(spec);
            try {
                out.put("resumed", ConsumerSupport.indexes(pollUntil(second, more, timeout, 500)));
            } finally {
                second.shutdown();
            }
            return out;
        } finally {
            producer.shutdown();
        }
    }

    /**
     * Assign mode on a two-queue topic: queue 0 holds messages 0..9, queue 1 holds 10..14 and,
     * after a gap of a second, 15..19. The consumer seeks queue 0 to offset `seek` and queue 1
     * to its end, then two more messages (20, 21) go to queue 1: it receives exactly the rest
     * of queue 0 and the two. offsetForTimestamp(queue 1, time of the gap) names message 15;
     * commit with persist reaches the broker while the consumer still runs.
     * The group's offset of queue 0 is committed at its end (10) before the consumer starts:
     * the pull task that assign() starts then has nothing to fetch before the seek. Started
     * at 0, its pull may complete while seek() runs and, once the new task has taken the seek
     * offset, hand 0..9 to poll() as well (a race in the 4.9.8 client, seen on a loaded machine).
     */
    static JSONObject assign(Spec spec) throws Exception {
        ConsumerSupport.fastRebalance();
        spec.createTopic(spec.topic(), 2);
        int seek = spec.integer("seek", 4);
        long timeout = spec.seconds("timeout", 30);
        DefaultMQProducer producer = spec.startedProducer();
        try {
            MessageQueue q0 = ConsumerSupport.queue(producer, spec.topic(), 0);
            MessageQueue q1 = ConsumerSupport.queue(producer, spec.topic(), 1);
            ConsumerSupport.sendTo(producer, q0, 0, 10, "TagA");
            ConsumerSupport.sendTo(producer, q1, 10, 5, "TagA");
            long gap = System.currentTimeMillis() + 1000;
            Waits.until(() -> System.currentTimeMillis() >= gap, 5000);
            ConsumerSupport.sendTo(producer, q1, 15, 5, "TagA");

            ConsumerSupport.commitOffset(spec, spec.group(), q0, 10);
            DefaultLitePullConsumer consumer = spec.litePullConsumer(spec.group());
            consumer.setAutoCommit(false);
            consumer.start();
            JSONObject out = new JSONObject(true);
            try {
                Collection<MessageQueue> all = consumer.fetchMessageQueues(spec.topic());
                List<Integer> ids = new ArrayList<>();
                for (MessageQueue queue : all) {
                    ids.add(queue.getQueueId());
                }
                ids.sort(Integer::compare);
                out.put("fetchMessageQueues", ids);
                out.put("offsetForTimestamp", consumer.offsetForTimestamp(q1, gap));
                consumer.assign(List.of(q0, q1));
                consumer.seek(q0, seek);
                consumer.seekToEnd(q1);
                ConsumerSupport.sendTo(producer, q1, 20, 2, "TagA");
                List<MessageExt> received = pollUntil(consumer, 10 - seek + 2, timeout, 500);
                Map<String, List<Integer>> perQueue = new TreeMap<>();
                for (MessageExt m : received) {
                    perQueue.computeIfAbsent(Integer.toString(m.getQueueId()), q -> new ArrayList<>())
                        .add(ConsumerSupport.index(m));
                }
                out.put("perQueue", perQueue);
                consumer.commit(new HashSet<>(List.of(q0, q1)), true);
                out.putAll(ConsumerSupport.awaitCommitted(spec, spec.group(), spec.topic(), 2));
            } finally {
                consumer.shutdown();
            }
            return out;
        } finally {
            producer.shutdown();
        }
    }
}

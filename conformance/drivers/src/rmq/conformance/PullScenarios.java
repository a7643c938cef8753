// Scenario of DefaultMQPullConsumer, the consumer that names queue and offset itself: the
// queues of a topic, pulls at offsets and with tag expressions, every PullStatus a broker
// answers (FOUND, NO_NEW_MSG, NO_MATCHED_MSG, OFFSET_ILLEGAL), a pull the broker holds until a
// message arrives, and the consumer offset round trip through the broker.
package rmq.conformance;

import com.alibaba.fastjson.JSONObject;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

@SuppressWarnings("deprecation")
final class PullScenarios {
    private PullScenarios() {
    }

    /** Status, indexes (in pull order), next begin offset and the queue's min / max offsets. */
    static JSONObject describe(PullResult result) {
        JSONObject out = new JSONObject(true);
        out.put("status", result.getPullStatus().name());
        List<Integer> indexes = new ArrayList<>();
        if (result.getMsgFoundList() != null) {
            for (MessageExt m : result.getMsgFoundList()) {
                indexes.add(ConsumerSupport.index(m));
            }
        }
        out.put("indexes", indexes);
        out.put("nextBeginOffset", result.getNextBeginOffset());
        out.put("minOffset", result.getMinOffset());
        out.put("maxOffset", result.getMaxOffset());
        return out;
    }

    /**
     * A four-queue topic; queue 0 gets messages 0..9 (TagA, TagB in turn), queue 1 stays
     * empty, queue 2 gets one message while a pullBlockIfNotFound waits on it, queue 3 gets 40
     * messages for a pull of 64 (more than a broker's maxTransferCountOnMessageInMemory, 32).
     */
    static JSONObject pull(Spec spec) throws Exception {
        spec.createTopic(spec.topic(), 4);
        DefaultMQProducer producer = spec.startedProducer();
        DefaultMQPullConsumer consumer = spec.pullConsumer(spec.group());
        consumer.start();
        try {
            MessageQueue q0 = ConsumerSupport.queue(producer, spec.topic(), 0);
            MessageQueue q1 = ConsumerSupport.queue(producer, spec.topic(), 1);
            MessageQueue q2 = ConsumerSupport.queue(producer, spec.topic(), 2);
            MessageQueue q3 = ConsumerSupport.queue(producer, spec.topic(), 3);
            ConsumerSupport.sendTo(producer, q0, 0, 10, "TagA,TagB");
            ConsumerSupport.sendTo(producer, q3, 200, 40, "TagA");
            JSONObject out = new JSONObject(true);
            List<Integer> ids = new ArrayList<>();
            for (MessageQueue queue : consumer.fetchSubscribeMessageQueues(spec.topic())) {
                ids.add(queue.getQueueId());
            }
            ids.sort(Integer::compare);
            out.put("queues", ids);
            out.put("all", describe(consumer.pull(q0, "*", 0, 32)));
            out.put("window", describe(consumer.pull(q0, "*", 3, 4)));
            out.put("tagA", describe(consumer.pull(q0, "TagA", 0, 32)));
            out.put("tagAorB", describe(consumer.pull(q0, "TagA || TagB", 5, 32)));
            out.put("noMatch", describe(consumer.pull(q0, "TagZ", 0, 32)));
            out.put("atEnd", describe(consumer.pull(q0, "*", 10, 32)));
            out.put("beyondEnd", describe(consumer.pull(q0, "*", 50, 32)));
            out.put("emptyQueue", describe(consumer.pull(q1, "*", 0, 32)));
            out.put("emptyQueueBeyond", describe(consumer.pull(q1, "*", 3, 32)));
            out.put("blocked", blockedPull(consumer, producer, q2));
            out.put("moreThanTheBrokerGives", describe(consumer.pull(q3, "*", 0, 64)));

            consumer.updateConsumeOffset(q0, 7);
            out.put("offsetInMemory", consumer.fetchConsumeOffset(q0, false));
            out.put("offsetBeforePersist", consumer.fetchConsumeOffset(q1, true));
            consumer.getDefaultMQPullConsumerImpl().getOffsetStore().persist(q0);
            AtomicReference<Long> stored = new AtomicReference<>();
            Waits.until(() -> {
                try {
                    stored.set(consumer.fetchConsumeOffset(q0, true));
                } catch (Exception e) {
                    return false;
                }
                return stored.get() == 7;
            }, 10_000);
            out.put("offsetInBroker", stored.get());
            return out;
        } finally {
            consumer.shutdown();
            producer.shutdown();
        }
    }

    /**
     * pullBlockIfNotFound on an empty queue from a thread; once that thread waits for the
     * answer, one message (index 100) goes to the queue; the pull's result.
     */
    private static JSONObject blockedPull(DefaultMQPullConsumer consumer,
        DefaultMQProducer producer, MessageQueue queue) throws Exception {
        AtomicReference<Object> outcome = new AtomicReference<>();
        Thread puller = new Thread(() -> {
            try {
                outcome.set(consumer.pullBlockIfNotFound(queue, "*", 0, 32));
            } catch (Exception e) {
                outcome.set(e);
            }
        }, "blocked-pull");
        puller.start();
        Waits.until(() -> puller.getState() == Thread.State.TIMED_WAITING
            || puller.getState() == Thread.State.WAITING || outcome.get() != null, 10_000);
        ConsumerSupport.sendTo(producer, queue, 100, 1, "TagA");
        puller.join(40_000);
        Object result = outcome.get();
        if (!(result instanceof PullResult)) {
            throw new IllegalStateException("blocked pull ended with " + result);
        }
        return describe((PullResult) result);
    }
}

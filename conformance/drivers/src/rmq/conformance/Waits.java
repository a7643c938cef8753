// Waiting for conditions with a deadline (never a bare sleep standing in for one), and the
// thread-safe collector consumers hand their messages to.
package rmq.conformance;

import com.alibaba.fastjson.JSONObject;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.protocol.route.TopicRouteData;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

final class Waits {
    private Waits() {
    }

    /** Poll `condition` every 50 ms until it holds; false when `timeoutMillis` passed first. */
    static boolean until(BooleanSupplier condition, long timeoutMillis) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            Thread.sleep(50);
        }
        return true;
    }

    /** Wait until the name server's route for `topic` lists at least `queues` write queues. */
    static void forRoute(DefaultMQAdminExt admin, String topic, int queues) throws Exception {
        boolean ok = until(() -> {
            try {
                TopicRouteData route = admin.examineTopicRouteInfo(topic);
                return route.getQueueDatas().stream().mapToInt(q -> q.getWriteQueueNums()).sum()
                    >= queues;
            } catch (Exception e) {
                return false;
            }
        }, 30_000);
        if (!ok) {
            throw new IllegalStateException("no route for " + topic + " within 30 s");
        }
    }

    /** Messages handed over by consumer threads, in arrival order. */
    static final class Collector {
        private final List<MessageExt> messages = new ArrayList<>();

        synchronized void add(MessageExt message) {
            messages.add(message);
        }

        synchronized void addAll(List<MessageExt> batch) {
            messages.addAll(batch);
        }

        synchronized int size() {
            return messages.size();
        }

        synchronized List<MessageExt> snapshot() {
            return new ArrayList<>(messages);
        }

        /** Wait until `count` messages arrived; then wait `settleMillis` more for extras. */
        List<MessageExt> await(int count, long timeoutMillis, long settleMillis)
            throws InterruptedException {
            until(() -> size() >= count, timeoutMillis);
            if (settleMillis > 0) {
                Thread.sleep(settleMillis);
            }
            return snapshot();
        }

        static JSONObject summary(List<MessageExt> messages) {
            JSONObject out = new JSONObject();
            out.put("count", messages.size());
            out.put("messages", Records.sorted(messages));
            return out;
        }
    }
}

// Traffic through a DLedger broker group whose leader may change under it: numbered sends that
// are retried until the group acknowledges each one, and a read of every queue of the topic
// from offset 0 through the group's master, as Apache's Java client does them.
package rmq.conformance;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

@SuppressWarnings("deprecation")
final class DLedgerTraffic {
    private DLedgerTraffic() {
    }

    /** Message i's body: "dledger-i", and with "padded" a tail of 0-699 dots after it. */
    static String body(int i, boolean padded) {
        return "dledger-" + i + (padded ? ".".repeat(i * 53 % 700) : "");
    }

    /**
     * Messages `from` .. `from + count - 1` (body `body(i, padded)`, key "k-i") sent one after the
     * other; a send that fails or is not SEND_OK is tried again until "deadline" seconds
     * have passed.  "create": create the topic ("queues" queues) on the masters first.
     * Out: "acks" (i, msgId, broker, queueId, queueOffset of each SEND_OK) and "failures"
     * (the attempts that were not).
     */
    static JSONObject send(Spec spec) throws Exception {
        if (spec.flag("create")) {
            spec.createTopic(spec.topic(), spec.integer("queues", 4));
        }
        int from = spec.integer("from", 0);
        int count = spec.integer("count", 20);
        boolean padded = spec.flag("padded");
        long deadline = System.currentTimeMillis() + spec.seconds("deadline", 60);
        DefaultMQProducer producer = spec.startedProducer();
        JSONArray acks = new JSONArray();
        JSONArray errors = new JSONArray();
        try {
            for (int i = from; i < from + count; i++) {
                Message message = new Message(spec.topic(), "dl", "k-" + i,
                    body(i, padded).getBytes(StandardCharsets.UTF_8));
                while (true) {
                    String error;
                    try {
                        SendResult result = producer.send(message);
                        if (result.getSendStatus() == SendStatus.SEND_OK) {
                            JSONObject ack = new JSONObject(true);
                            ack.put("i", i);
                            ack.put("msgId", result.getMsgId());
                            ack.put("broker", result.getMessageQueue().getBrokerName());
                            ack.put("queueId", result.getMessageQueue().getQueueId());
                            ack.put("queueOffset", result.getQueueOffset());
                            acks.add(ack);
                            break;
                        }
                        error = result.getSendStatus().name();
                    } catch (Exception e) {
                        error = e.getClass().getSimpleName() + ": " + e.getMessage();
                    }
                    errors.add(error);
                    if (System.currentTimeMillis() > deadline) {
                        throw new IllegalStateException("message " + i + " not acknowledged by the"
                            + " deadline; last error " + error);
                    }
                    Thread.sleep(200);
                }
            }
        } finally {
            producer.shutdown();
        }
        JSONObject out = new JSONObject(true);
        out.put("acks", acks);
        out.put("failures", errors.size());
        return out;
    }

    /**
     * Every queue of the topic pulled from offset 0 to its end at the master, again until
     * the bodies `body(i, padded)` for every i in "expect" were read or "deadline" seconds passed.
     * Out: "messages" (body, queueId, queueOffset, msgId of each message read, in queue order).
     */
    static JSONObject consume(Spec spec) throws Exception {
        Set<String> expected = new HashSet<>();
        for (Object i : spec.json.getJSONArray("expect")) {
            expected.add(body(((Number) i).intValue(), spec.flag("padded")));
        }
        long deadline = System.currentTimeMillis() + spec.seconds("deadline", 60);
        DefaultMQPullConsumer consumer = spec.pullConsumer(spec.group());
        consumer.start();
        try {
            while (true) {
                JSONArray messages = new JSONArray();
                Set<String> seen = new HashSet<>();
                try {
                    for (MessageQueue queue : consumer.fetchSubscribeMessageQueues(spec.topic())) {
                        readQueue(consumer, queue, messages, seen);
                    }
                } catch (Exception e) {
                    if (System.currentTimeMillis() > deadline) {
                        throw e;
                    }
                }
                if (seen.containsAll(expected) || System.currentTimeMillis() > deadline) {
                    JSONObject out = new JSONObject(true);
                    out.put("messages", messages);
                    return out;
                }
                Thread.sleep(200);
            }
        } finally {
            consumer.shutdown();
        }
    }

    private static void readQueue(DefaultMQPullConsumer consumer, MessageQueue queue,
        JSONArray messages, Set<String> seen) throws Exception {
        long offset = 0;
        while (true) {
            PullResult result = consumer.pull(queue, "*", offset, 32);
            if (result.getPullStatus() != PullStatus.FOUND) {
                return;
            }
            List<MessageExt> found = result.getMsgFoundList();
            for (MessageExt message : found) {
                String text = new String(message.getBody(), StandardCharsets.UTF_8);
                JSONObject record = new JSONObject(true);
                record.put("body", text);
                record.put("queueId", message.getQueueId());
                record.put("queueOffset", message.getQueueOffset());
                record.put("msgId", message.getMsgId());
                messages.add(record);
                seen.add(text);
            }
            offset = result.getNextBeginOffset();
        }
    }
}

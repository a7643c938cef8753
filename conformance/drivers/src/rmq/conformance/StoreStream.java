// The kill -9 steps of the store conformance tests (tests/conformance/test_stores.py).
//
// `run` does, in order, what the spec asks for:
//  * "verify": [{queueId, queueOffset, msgId, keys, body}]: messages acknowledged before the
//    previous broker was killed; each is pulled at its queue and offset from the broker now
//    serving the store.  The result lists those missing or different.
//  * "fresh": N sync sends that must succeed, each then pulled at the offset its result named.
//  * "stream": sync sends of numbered messages, each acknowledged one printed at once as
//    `ACK {json}` on stdout, until three sends in a row fail (the harness kills the broker
//    in the middle) or "maxStream" were sent.
// Pulls use a DefaultMQPullConsumer on the spec's topic (broker name from the route).
package rmq.conformance;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
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

final class StoreStream {
    private StoreStream() {
    }

    @SuppressWarnings("deprecation")
    static JSONObject run(Spec spec) throws Exception {
        JSONObject out = new JSONObject(true);
        DefaultMQPullConsumer puller = spec.pullConsumer(spec.group() + "-pull");
        puller.start();
        try {
            Set<MessageQueue> queues = puller.fetchSubscribeMessageQueues(spec.topic());
            Map<Integer, MessageQueue> byId = new HashMap<>();
            for (MessageQueue queue : queues) {
                byId.put(queue.getQueueId(), queue);
            }
            JSONArray verify = spec.json.getJSONArray("verify");
            if (verify != null) {
                out.put("verified", verify.size());
                out.put("problems", check(puller, byId, verify));
            }
            int fresh = spec.integer("fresh", 0);
            if (fresh > 0) {
                DefaultMQProducer producer = spec.startedProducer();
                JSONArray sent = new JSONArray();
                try {
                    for (int i = 0; i < fresh; i++) {
                        sent.add(send(producer, spec, "fresh", i));
                    }
                } finally {
                    producer.shutdown();
                }
                out.put("fresh", sent);
                out.put("freshProblems", check(puller, byId, sent));
            }
        } finally {
            puller.shutdown();
        }
        if (spec.flag("stream")) {
            out.put("acked", stream(spec));
        }
        return out;
    }

    static JSONObject send(DefaultMQProducer producer, Spec spec, String kind, int i)
        throws Exception {
        String keys = kind + "-" + spec.str("label") + "-" + i;
        byte[] body = (kind + " " + spec.str("label") + " " + i + " ")
            .repeat(1 + i % 7).getBytes(StandardCharsets.UTF_8);
        Message message = new Message(spec.topic(), "Stream", keys, body);
        SendResult result = producer.send(message);
        if (result.getSendStatus() != SendStatus.SEND_OK) {
            throw new IllegalStateException("send " + keys + ": " + result.getSendStatus());
        }
        JSONObject out = new JSONObject(true);
        out.put("queueId", result.getMessageQueue().getQueueId());
        out.put("queueOffset", result.getQueueOffset());
        out.put("msgId", result.getMsgId());
        out.put("keys", keys);
        out.put("body", Base64.getEncoder().encodeToString(body));
        return out;
    }

    static JSONArray stream(Spec spec) throws Exception {
        DefaultMQProducer producer = spec.producer();
        producer.setRetryTimesWhenSendFailed(0);
        producer.setSendMsgTimeout(3000);
        producer.start();
        JSONArray acked = new JSONArray();
        int failures = 0;
        int max = spec.integer("maxStream", 20000);
        long deadline = System.currentTimeMillis() + spec.seconds("streamSeconds", 60);
        try {
            for (int i = 0; i < max && failures < 3 && System.currentTimeMillis() < deadline; i++) {
                try {
                    JSONObject ack = send(producer, spec, "stream", i);
                    acked.add(ack);
                    failures = 0;
                    System.out.println("ACK " + JSON.toJSONString(ack));
                    System.out.flush();
                } catch (Exception e) {
                    failures++;
                }
            }
        } finally {
            producer.shutdown();
        }
        return acked;
    }

    /** Pull every expected message at its queue and offset: what is missing or different. */
    @SuppressWarnings("deprecation")
    static JSONArray check(DefaultMQPullConsumer puller, Map<Integer, MessageQueue> queues,
        JSONArray expected) throws Exception {
        Map<Integer, Map<Long, MessageExt>> stored = new HashMap<>();
        Map<Integer, long[]> ranges = new HashMap<>();
        for (Object item : expected) {
            JSONObject e = (JSONObject) item;
            long offset = e.getLongValue("queueOffset");
            ranges.merge(e.getIntValue("queueId"), new long[] {offset, offset},
                (a, b) -> new long[] {Math.min(a[0], b[0]), Math.max(a[1], b[1])});
        }
        for (Map.Entry<Integer, long[]> range : ranges.entrySet()) {
            MessageQueue queue = queues.get(range.getKey());
            Map<Long, MessageExt> found = new HashMap<>();
            stored.put(range.getKey(), found);
            if (queue == null) {
                continue;
            }
            long offset = range.getValue()[0];
            while (offset <= range.getValue()[1]) {
                PullResult pulled = puller.pull(queue, "*", offset, 32);
                if (pulled.getPullStatus() != PullStatus.FOUND) {
                    break;
                }
                for (MessageExt message : pulled.getMsgFoundList()) {
                    found.put(message.getQueueOffset(), message);
                }
                offset = pulled.getNextBeginOffset();
            }
        }
        JSONArray problems = new JSONArray();
        for (Object item : expected) {
            JSONObject e = (JSONObject) item;
            MessageExt message = stored.get(e.getIntValue("queueId")).get(e.getLongValue("queueOffset"));
            String where = e.getIntValue("queueId") + "@" + e.getLongValue("queueOffset");
            if (message == null) {
                problems.add("missing " + e.getString("keys") + " at " + where);
            } else if (!e.getString("keys").equals(message.getKeys())
                || !e.getString("msgId").equals(message.getMsgId())
                || !e.getString("body").equals(Base64.getEncoder().encodeToString(message.getBody()))) {
                problems.add("at " + where + " expected " + e.getString("keys") + ", found "
                    + message.getKeys() + " " + message.getMsgId());
            }
        }
        return problems;
    }
}

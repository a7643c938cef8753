// Scenario of request-reply (DefaultMQProducer.request): a responder (push consumer plus a
// producer) answers each request with MessageUtil.createReplyMessage, which the client sends
// to `<cluster>_REPLY_TOPIC` with SEND_REPLY_MESSAGE(_V2) (324/325); the broker pushes the reply
// to the requesting client (PUSH_REPLY_MESSAGE_TO_CLIENT, 326) and the request completes.
package rmq.conformance;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.RequestCallback;
import org.apache.rocketmq.client.utils.MessageUtil;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

final class RequestScenarios {
    private RequestScenarios() {
    }

    /**
     * `count` asynchronous requests; the responder answers request `i` with body "reply to i".
     * Waits until every request completed (reply or exception) or the responder failed to send
     * a reply; the result lists the replies and every failure.  With `noResponder` another
     * process answers (rmq reply): only the requests are sent.
     */
    static JSONObject requestReply(Spec spec) throws Exception {
        spec.createTopics();
        int count = spec.integer("count", 3);
        long timeout = spec.seconds("timeout", 30);
        List<String> responderErrors = new ArrayList<>();
        boolean ownResponder = !spec.flag("noResponder");
        DefaultMQProducer replier = spec.producer();
        replier.setProducerGroup(spec.group() + "-replier");
        DefaultMQPushConsumer responder = spec.pushConsumer(spec.group());
        responder.subscribe(spec.topic(), "*");
        responder.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        responder.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt request : msgs) {
                try {
                    Message reply = MessageUtil.createReplyMessage(request,
                        ("reply to " + request.getKeys()).getBytes(StandardCharsets.UTF_8));
                    reply.putUserProperty("answers", request.getKeys());
                    replier.send(reply, 5000);
                } catch (Exception e) {
                    synchronized (responderErrors) {
                        responderErrors.add(e.getClass().getSimpleName() + ": " + e.getMessage());
                    }
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        if (ownResponder) {
            replier.start();
            responder.start();
        }
        DefaultMQProducer requester = spec.producer();
        requester.start();
        Map<String, JSONObject> replies = new ConcurrentHashMap<>();
        Map<String, String> failures = new ConcurrentHashMap<>();
        List<Object> errorsBeforeShutdown = new ArrayList<>();
        try {
            for (int i = 0; i < count; i++) {
                String key = "request-" + i;
                Message request = new Message(spec.topic(), "TagR", key,
                    ("question " + i).getBytes(StandardCharsets.UTF_8));
                requester.request(request, new RequestCallback() {
                    @Override
                    public void onSuccess(Message reply) {
                        JSONObject out = new JSONObject(true);
                        out.put("topic", reply.getTopic());
                        Records.putBody(out, reply.getBody());
                        out.put("properties", Records.userProperties(reply));
                        replies.put(key, out);
                    }

                    @Override
                    public void onException(Throwable e) {
                        failures.put(key, e.getClass().getSimpleName());
                    }
                }, timeout);
            }
            boolean done = Waits.until(() -> {
                synchronized (responderErrors) {
                    if (!responderErrors.isEmpty()) {
                        return true;
                    }
                }
                return replies.size() + failures.size() >= count;
            }, timeout);
            if (!done) {
                failures.put("all", "no reply or failure within the timeout");
            }
            // A request delivered again (at least once) may still be answered while the
            // consumer shuts down, which interrupts its send: only what failed before counts.
            synchronized (responderErrors) {
                errorsBeforeShutdown.addAll(responderErrors);
            }
        } finally {
            requester.shutdown();
            if (ownResponder) {
                responder.shutdown();
                replier.shutdown();
            }
        }
        JSONObject out = new JSONObject();
        out.put("replies", new TreeMap<>(replies));
        out.put("failures", new TreeMap<>(failures));
        out.put("responderErrors", new JSONArray(errorsBeforeShutdown));
        return out;
    }
}

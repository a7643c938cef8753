// Plain ACL through Apache's own client classes: the signatures AclClientRPCHook puts on fixed
// requests (vectors for rmq's signer), and a producer and consumer carrying the hook against
// an ACL-enabled broker (the codes and remarks a refusal comes back with).
package rmq.conformance;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Map;
import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

final class AclScenarios {
    private AclScenarios() {
    }

    /**
     * For each case {code, fields{}, body (base64, optional), accessKey, secretKey,
     * securityToken (optional)}: the ext fields after AclClientRPCHook.doBeforeRequest.
     */
    static JSONObject sign(Spec spec) {
        JSONArray out = new JSONArray();
        for (Object item : spec.json.getJSONArray("cases")) {
            JSONObject c = (JSONObject) item;
            RemotingCommand request = RemotingCommand.createRequestCommand(c.getIntValue("code"), null);
            JSONObject fields = c.getJSONObject("fields");
            if (fields != null) {
                for (Map.Entry<String, Object> e : fields.entrySet()) {
                    request.addExtField(e.getKey(), String.valueOf(e.getValue()));
                }
            }
            String body = c.getString("body");
            if (body != null) {
                request.setBody(Base64.getDecoder().decode(body));
            }
            SessionCredentials credentials = new SessionCredentials(
                c.getString("accessKey"), c.getString("secretKey"), c.getString("securityToken"));
            new AclClientRPCHook(credentials).doBeforeRequest("127.0.0.1:0", request);
            out.add(new JSONObject(new java.util.TreeMap<String, Object>(request.getExtFields())));
        }
        JSONObject result = new JSONObject();
        result.put("signed", out);
        result.put("charset", StandardCharsets.UTF_8.name());
        return result;
    }

    private static RPCHook hook(JSONObject step) {
        String accessKey = step.getString("accessKey");
        if (accessKey == null) {
            return null;
        }
        return new AclClientRPCHook(new SessionCredentials(accessKey, step.getString("secretKey")));
    }

    private static JSONObject refusal(int code, String remark) {
        JSONObject out = new JSONObject();
        out.put("code", code);
        out.put("remark", remark);
        return out;
    }

    /**
     * Runs spec.steps in order against spec.namesrv / spec.broker, each with its own
     * credentials (accessKey, secretKey; none: no hook): "createTopic" (admin client),
     * "send" (one message "body"), "pull" (from offset 0 as "group"); the topic is the step's
     * "topic", else spec.topic.
     * Each step's outcome: {"status": ...} or the broker's refusal {"code", "remark"}.
     */
    static JSONObject steps(Spec spec) throws Exception {
        JSONArray outcomes = new JSONArray();
        for (Object item : spec.json.getJSONArray("steps")) {
            JSONObject step = (JSONObject) item;
            String op = step.getString("op");
            String topic = step.getString("topic") != null ? step.getString("topic") : spec.topic();
            try {
                if ("createTopic".equals(op)) {
                    DefaultMQAdminExt admin = new DefaultMQAdminExt(hook(step), 5000);
                    admin.setNamesrvAddr(spec.namesrv());
                    admin.setInstanceName(spec.instance("admin"));
                    admin.start();
                    try {
                        admin.createAndUpdateTopicConfig(spec.str("broker"),
                            new TopicConfig(topic, 2, 2, 6));
                        JSONObject out = new JSONObject();
                        out.put("status", "CREATED");
                        outcomes.add(out);
                    } finally {
                        admin.shutdown();
                    }
                } else if ("send".equals(op)) {
                    DefaultMQProducer producer = new DefaultMQProducer(
                        step.getString("group"), hook(step));
                    producer.setNamesrvAddr(spec.namesrv());
                    producer.setInstanceName(spec.instance("producer"));
                    producer.setRetryTimesWhenSendFailed(0);
                    producer.setSendMsgTimeout(5000);
                    producer.start();
                    try {
                        Message message = new Message(topic,
                            step.getString("body").getBytes(StandardCharsets.UTF_8));
                        SendResult result = producer.send(message);
                        JSONObject out = new JSONObject();
                        out.put("status", result.getSendStatus().name());
                        outcomes.add(out);
                    } finally {
                        producer.shutdown();
                    }
                } else if ("pull".equals(op)) {
                    DefaultMQPullConsumer consumer = new DefaultMQPullConsumer(
                        step.getString("group"), hook(step));
                    consumer.setNamesrvAddr(spec.namesrv());
                    consumer.setInstanceName(spec.instance("consumer"));
                    consumer.start();
                    try {
                        List<String> bodies = new ArrayList<>();
                        String status = null;
                        for (MessageQueue mq : consumer.fetchSubscribeMessageQueues(topic)) {
                            PullResult result = consumer.pull(mq, "*", 0, 32);
                            if (status == null || result.getMsgFoundList() != null) {
                                status = result.getPullStatus().name();
                            }
                            if (result.getMsgFoundList() != null) {
                                for (MessageExt m : result.getMsgFoundList()) {
                                    bodies.add(new String(m.getBody(), StandardCharsets.UTF_8));
                                }
                            }
                        }
                        java.util.Collections.sort(bodies);
                        JSONObject out = new JSONObject();
                        out.put("status", status);
                        out.put("bodies", bodies);
                        outcomes.add(out);
                    } finally {
                        consumer.shutdown();
                    }
                } else {
                    throw new IllegalArgumentException("unknown step " + op);
                }
            } catch (MQBrokerException e) {
                outcomes.add(refusal(e.getResponseCode(), e.getErrorMessage()));
            } catch (MQClientException e) {
                if (e.getCause() instanceof MQBrokerException) {
                    MQBrokerException cause = (MQBrokerException) e.getCause();
                    outcomes.add(refusal(cause.getResponseCode(), cause.getErrorMessage()));
                } else {
                    outcomes.add(refusal(e.getResponseCode(), e.getErrorMessage()));
                }
            }
        }
        JSONObject result = new JSONObject();
        result.put("outcomes", outcomes);
        return result;
    }
}

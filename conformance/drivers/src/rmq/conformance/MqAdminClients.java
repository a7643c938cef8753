// The state the mqadmin conformance tests (tests/conformance/test_mqadmin.py) look at, built
// with Apache's Java client and kept alive while they run: `MqAdminClients` reads one line of
// JSON (the spec) on stdin, creates its topics and subscription groups on every master of the
// cluster, sends one heartbeat for each `heartbeatGroups` group (as mqadmin's own pull
// consumers do when they live a second: the broker creates the group's retry topic), sends its
// messages to the queues they name with a producer that stays connected (producerConnection),
// sends one message with message trace on and waits until its trace record can be queried
// (queryMsgTraceById), starts its push consumers and waits until each has consumed everything
// and its offsets are committed on the broker (consumerProgress).  A consumer's `retryKey`
// message is answered RECONSUME_LATER once, so it comes back through the group's retry topic,
// which then has a committed offset too.  Then it prints `READY <json>` (what was sent, where,
// and the client ids) and keeps the clients running until stdin closes.  Failures print
// `FAILED <message>` and exit 1.
package rmq.conformance;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.admin.ConsumeStats;
import org.apache.rocketmq.common.admin.OffsetWrapper;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.body.ClusterInfo;
import org.apache.rocketmq.common.protocol.route.BrokerData;
import org.apache.rocketmq.common.protocol.route.TopicRouteData;
import org.apache.rocketmq.common.subscription.SubscriptionGroupConfig;
import org.apache.rocketmq.common.topic.TopicValidator;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

public final class MqAdminClients {
    private static final long TIMEOUT_MILLIS = 60_000;

    private MqAdminClients() {
    }

    interface Check {
        boolean holds() throws Exception;
    }

    static void await(String what, Check check) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TIMEOUT_MILLIS);
        Exception last = null;
        while (System.nanoTime() < deadline) {
            try {
                if (check.holds()) {
                    return;
                }
            } catch (Exception e) {
                last = e;
            }
            Thread.sleep(100);
        }
        throw new IllegalStateException(what + " within " + TIMEOUT_MILLIS + " ms", last);
    }

    static List<String> masters(DefaultMQAdminExt admin) throws Exception {
        List<String> out = new ArrayList<>();
        ClusterInfo cluster = admin.examineBrokerClusterInfo();
        for (BrokerData broker : cluster.getBrokerAddrTable().values()) {
            String master = broker.getBrokerAddrs().get(0L);
            if (master != null) {
                out.add(master);
            }
        }
        return out;
    }

    static int writeQueues(DefaultMQAdminExt admin, String topic) throws Exception {
        TopicRouteData route = admin.examineTopicRouteInfo(topic);
        return route.getQueueDatas().stream().mapToInt(q -> q.getWriteQueueNums()).sum();
    }

    static Message message(JSONObject m) {
        Message message = new Message(m.getString("topic"),
            m.getString("body").getBytes(StandardCharsets.UTF_8));
        if (m.containsKey("tags")) {
            message.setTags(m.getString("tags"));
        }
        if (m.containsKey("keys")) {
            message.setKeys(m.getString("keys"));
        }
        return message;
    }

    static JSONObject sent(SendResult result) {
        if (result.getSendStatus() != SendStatus.SEND_OK) {
            throw new IllegalStateException("send: " + result);
        }
        JSONObject out = new JSONObject();
        out.put("msgId", result.getMsgId());
        out.put("offsetMsgId", result.getOffsetMsgId());
        out.put("queueId", result.getMessageQueue().getQueueId());
        out.put("queueOffset", result.getQueueOffset());
        return out;
    }

    /**
     * One heartbeat of a pull consumer of `group` that looked up `topic`'s queues, as mqadmin's
     * message commands send when they live long enough (the broker then creates the group's
     * retry topic).
     */
    @SuppressWarnings("deprecation")
    static void heartbeat(String namesrv, String group, String topic) throws Exception {
        DefaultMQPullConsumer consumer = new DefaultMQPullConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName("MqaHeartbeat");
        consumer.start();
        try {
            MQClientInstance client =
                consumer.getDefaultMQPullConsumerImpl().getRebalanceImpl().getmQClientFactory();
            client.updateTopicRouteInfoFromNameServer(topic);
            client.sendHeartbeatToAllBrokerWithLock();
        } finally {
            consumer.shutdown();
        }
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in,
            StandardCharsets.UTF_8));
        List<Runnable> shutdowns = new ArrayList<>();
        int status = 0;
        try {
            JSONObject spec = JSON.parseObject(in.readLine());
            System.out.println("READY " + setUp(spec, shutdowns).toJSONString());
            System.out.flush();
            while (in.read() != -1) {
                continue;
            }
        } catch (Throwable e) {
            System.out.println("FAILED " + e);
            e.printStackTrace();
            status = 1;
        } finally {
            for (int i = shutdowns.size() - 1; i >= 0; i--) {
                shutdowns.get(i).run();
            }
            System.out.flush();
            System.exit(status);
        }
    }

    static JSONObject setUp(JSONObject spec, List<Runnable> shutdowns) throws Exception {
        String namesrv = spec.getString("namesrv");
        String brokerName = spec.getString("brokerName");
        JSONObject out = new JSONObject();

        DefaultMQAdminExt admin = new DefaultMQAdminExt(5000);
        admin.setNamesrvAddr(namesrv);
        admin.setInstanceName("MqaAdmin");
        admin.start();
        shutdowns.add(admin::shutdown);
        JSONObject topics = spec.getJSONObject("topics");
        for (String master : masters(admin)) {
            for (String topic : topics.keySet()) {
                int queues = topics.getIntValue(topic);
                admin.createAndUpdateTopicConfig(master, new TopicConfig(topic, queues, queues, 6));
            }
            for (Object group : spec.getJSONArray("groups")) {
                SubscriptionGroupConfig config = new SubscriptionGroupConfig();
                config.setGroupName((String) group);
                admin.createAndUpdateSubscriptionGroupConfig(master, config);
            }
        }
        for (String topic : topics.keySet()) {
            int queues = topics.getIntValue(topic);
            await("no route for " + topic, () -> writeQueues(admin, topic) >= queues);
        }

        JSONArray heartbeats = spec.getJSONArray("heartbeatGroups");
        for (int i = 0; heartbeats != null && i < heartbeats.size(); i++) {
            String first = topics.keySet().iterator().next();
            heartbeat(namesrv, heartbeats.getString(i), first);
            String retry = MixAll.getRetryTopic(heartbeats.getString(i));
            await("no route for " + retry, () -> writeQueues(admin, retry) > 0);
        }

        DefaultMQProducer producer = new DefaultMQProducer(spec.getString("producerGroup"));
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("MqaProducer");
        producer.start();
        shutdowns.add(producer::shutdown);
        JSONArray sent = new JSONArray();
        for (Object item : spec.getJSONArray("messages")) {
            JSONObject m = (JSONObject) item;
            MessageQueue queue = new MessageQueue(m.getString("topic"), brokerName,
                m.getIntValue("queue"));
            sent.add(sent(producer.send(message(m), queue)));
        }
        out.put("sent", sent);

        JSONObject traced = spec.getJSONObject("traced");
        if (traced != null) {
            DefaultMQProducer tracing = new DefaultMQProducer(
                traced.getString("producerGroup"), true);
            tracing.setNamesrvAddr(namesrv);
            tracing.setInstanceName("MqaTracingProducer");
            tracing.start();
            // The producer stays up until its trace record is stored: the trace dispatcher
            // sends in the background, and a producer shut down at once may drop the record
            // (on a loaded machine it had not yet fetched the trace topic's route).
            JSONObject result;
            try {
                MessageQueue queue = new MessageQueue(traced.getString("topic"), brokerName, 0);
                result = sent(tracing.send(message(traced), queue));
                String msgId = result.getString("msgId");
                await("no trace record of " + msgId, () -> !admin.queryMessage(
                    TopicValidator.RMQ_SYS_TRACE_TOPIC, msgId, 32, 0, Long.MAX_VALUE)
                    .getMessageList().isEmpty());
            } finally {
                tracing.shutdown();
            }
            out.put("traced", result);
        }

        JSONObject consumers = new JSONObject();
        for (Object item : spec.getJSONArray("consumers")) {
            JSONObject c = (JSONObject) item;
            String group = c.getString("group");
            DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
            consumer.setNamesrvAddr(namesrv);
            consumer.setInstanceName(c.getString("instance"));
            consumer.setPersistConsumerOffsetInterval(500);
            consumer.setHeartbeatBrokerInterval(1000);
            consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
            consumer.subscribe(c.getString("topic"), c.getString("expression"));
            AtomicInteger consumed = new AtomicInteger();
            String retryKey = c.getString("retryKey");
            consumer.setConsumeMessageBatchMaxSize(1);
            consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
                MessageExt m = msgs.get(0);
                if (m.getReconsumeTimes() == 0 && m.getKeys() != null
                    && m.getKeys().equals(retryKey)) {
                    return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                }
                consumed.incrementAndGet();
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            consumer.start();
            shutdowns.add(consumer::shutdown);
            int expected = c.getIntValue("expect");
            await(group + " consumed " + consumed + " of " + expected,
                () -> consumed.get() >= expected);
            String retryTopic = MixAll.getRetryTopic(group);
            await(group + "'s offsets not committed", () -> {
                ConsumeStats stats = admin.examineConsumeStats(group);
                boolean retried = retryKey == null;
                boolean topic = false;
                for (Map.Entry<MessageQueue, OffsetWrapper> e : stats.getOffsetTable().entrySet()) {
                    retried |= e.getKey().getTopic().equals(retryTopic)
                        && e.getValue().getConsumerOffset() > 0;
                    topic |= e.getKey().getTopic().equals(c.getString("topic"));
                }
                return retried && topic && stats.computeTotalDiff() == 0;
            });
            consumers.put(group, consumer.getDefaultMQPushConsumerImpl().getmQClientFactory()
                .getClientId());
        }
        out.put("consumers", consumers);
        return out;
    }
}

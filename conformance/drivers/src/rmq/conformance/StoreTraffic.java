// The traffic of the store conformance tests (tests/conformance/test_stores.py) and the reads
// that follow a broker switch.
//
// `traffic`: creates the spec's topic (4 queues), a side topic and a subscription group with
// settings of their own, then sends phase "one": single messages with tags, two keys, user
// properties and a flag, two bodies over 4 KiB (compressed by the client: text and binary), a
// batch, a message with delay level 2, and one committed and one rolled-back transactional
// message (TransactionMQProducer).  A push consumer of the spec's group consumes all of phase
// one (asking for one message, "single-one-3", to be delivered again: the broker's retry path)
// and stops once the broker holds its offsets; then phase "two" is sent and not consumed: single
// messages, a large one and a "pending" one with delay level 4, which the harness configures
// to an hour on the first broker, so that it is still parked when the store changes hands.
// With "readAll", a new group reads everything from the first offset.  The result lists every
// send (id, queue, offset, what was sent) and every received message with all its fields.
//
// `resume`: after the switch to another broker on the same store: the topics and groups that
// broker loaded, what the spec's group receives when it resumes from its stored offsets, what
// a new group reads from the first offset, and then (everything delivered by now) the spec's
// keys and unique ids looked up through the broker's index files.
package rmq.conformance;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.admin.ConsumeStats;
import org.apache.rocketmq.common.admin.OffsetWrapper;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.body.SubscriptionGroupWrapper;
import org.apache.rocketmq.common.protocol.body.TopicConfigSerializeWrapper;
import org.apache.rocketmq.common.protocol.route.BrokerData;
import org.apache.rocketmq.common.subscription.SubscriptionGroupConfig;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

final class StoreTraffic {
    private StoreTraffic() {
    }

    /** The first key of the message whose first delivery to the spec's group is retried. */
    static final String RETRIED = "single-one-3";

    static String sideTopic(Spec spec) {
        return spec.topic() + "-Side";
    }

    static String readAllGroup(Spec spec) {
        return spec.group() + "-all";
    }

    static JSONObject traffic(Spec spec) throws Exception {
        String topic = spec.topic();
        spec.createTopic(topic, 4);
        DefaultMQAdminExt admin = spec.admin();
        List<JSONObject> sends = new ArrayList<>();
        JSONObject out = new JSONObject(true);
        try {
            String master = master(admin);
            admin.createAndUpdateTopicConfig(master, new TopicConfig(sideTopic(spec), 3, 2, 4));
            SubscriptionGroupConfig group = new SubscriptionGroupConfig();
            group.setGroupName(spec.group());
            group.setRetryMaxTimes(7);
            group.setConsumeBroadcastEnable(false);
            admin.createAndUpdateSubscriptionGroupConfig(master, group);

            sendPhase(spec, "one", true, sends);
            int phaseOne = visible(sends);
            out.put("consumed", StoreRecords.records(spec.group(),
                consume(spec, admin, spec.group(), phaseOne + 1, RETRIED)));
            out.put("retried", RETRIED);
            sendPhase(spec, "two", false, sends);
            if (spec.flag("readAll")) {
                out.put("readAll", StoreRecords.records(readAllGroup(spec),
                    consume(spec, admin, readAllGroup(spec), visible(sends), null)));
            }
            out.put("storeHost", master);
        } finally {
            admin.shutdown();
        }
        out.put("sends", new JSONArray(new ArrayList<>(sends)));
        return out;
    }

    static JSONObject resume(Spec spec) throws Exception {
        DefaultMQAdminExt admin = spec.admin();
        JSONObject out = new JSONObject(true);
        try {
            String master = master(admin);
            TopicConfigSerializeWrapper topics = admin.getAllTopicConfig(master, 5000);
            JSONObject topicConfigs = new JSONObject(true);
            for (String name : new String[] {spec.topic(), sideTopic(spec)}) {
                TopicConfig config = topics.getTopicConfigTable().get(name);
                topicConfigs.put(name, config == null ? null : JSONObject.toJSON(config));
            }
            out.put("topics", topicConfigs);
            out.put("namesrvTopics", admin.fetchAllTopicList().getTopicList().contains(spec.topic()));
            SubscriptionGroupWrapper groups = admin.getAllSubscriptionGroup(master, 5000);
            SubscriptionGroupConfig group = groups.getSubscriptionGroupTable().get(spec.group());
            out.put("group", group == null ? null : JSONObject.toJSON(group));
            out.put("resumed", StoreRecords.records(spec.group(),
                consume(spec, admin, spec.group(), spec.integer("unconsumed", 0), null)));
            String fresh = spec.group() + "-new";
            out.put("readAll", StoreRecords.records(fresh,
                consume(spec, admin, fresh, spec.integer("total", 0), null)));
            out.put("lookups", lookups(spec, admin));
        } finally {
            admin.shutdown();
        }
        return out;
    }

    /**
     * The spec's "keys" looked up through the broker's index files (QUERY_MESSAGE): key ->
     * sorted unique ids found; and its "ids" by unique key (viewMessage): id -> id found.
     */
    static JSONObject lookups(Spec spec, DefaultMQAdminExt admin) throws Exception {
        JSONObject byKey = new JSONObject(true);
        for (Object key : spec.json.getJSONArray("keys")) {
            List<String> found = new ArrayList<>();
            try {
                for (MessageExt m : admin.queryMessage(spec.topic(), (String) key, 64, 0,
                    Long.MAX_VALUE).getMessageList()) {
                    found.add(m.getMsgId());
                }
            } catch (MQClientException e) {
                // "no message": an empty result
            }
            found.sort(null);
            byKey.put((String) key, found);
        }
        JSONObject byId = new JSONObject(true);
        for (Object id : spec.json.getJSONArray("ids")) {
            MessageExt m = null;
            try {
                m = admin.viewMessage(spec.topic(), (String) id);
            } catch (MQClientException e) {
                // not found
            }
            byId.put((String) id, m == null ? null : m.getMsgId());
        }
        JSONObject out = new JSONObject(true);
        out.put("byKey", byKey);
        out.put("byId", byId);
        return out;
    }

    static String master(DefaultMQAdminExt admin) throws Exception {
        for (BrokerData broker : admin.examineBrokerClusterInfo().getBrokerAddrTable().values()) {
            String addr = broker.getBrokerAddrs().get(0L);
            if (addr != null) {
                return addr;
            }
        }
        throw new IllegalStateException("no master broker registered");
    }

    /**
     * Messages that reach the topic while the traffic runs: all but the rolled-back
     * transactional one and the pending delayed one.
     */
    static int visible(List<JSONObject> sends) {
        int count = 0;
        for (JSONObject send : sends) {
            String kind = send.getString("kind");
            if (!"rollback".equals(kind) && !"pending".equals(kind)) {
                count++;
            }
        }
        return count;
    }

    static Message message(Spec spec, String phase, String kind, int i, byte[] body) {
        Message message = new Message(spec.topic(), i % 2 == 0 ? "TagA" : "TagB",
            kind + "-" + phase + "-" + i + " alt-" + phase + "-" + i, body);
        message.putUserProperty("phase", phase);
        message.putUserProperty("index", Integer.toString(i));
        message.putUserProperty("city", i % 2 == 0 ? "Zürich" : "Kraków");
        return message;
    }

    static byte[] text(String value) {
        return value.getBytes(StandardCharsets.UTF_8);
    }

    static JSONObject sent(String kind, Message message, String msgId, SendResult result,
        long queueOffset) {
        JSONObject out = new JSONObject(true);
        out.put("kind", kind);
        out.put("msgId", msgId);
        out.put("status", result.getSendStatus().name());
        out.put("queueId", result.getMessageQueue().getQueueId());
        out.put("queueOffset", queueOffset);
        out.put("tags", message.getTags());
        out.put("keys", message.getKeys());
        out.put("flag", message.getFlag());
        out.put("properties", Records.userProperties(message));
        out.put("body", Base64.getEncoder().encodeToString(message.getBody()));
        return out;
    }

    static void sendPhase(Spec spec, String phase, boolean everyKind, List<JSONObject> sends)
        throws Exception {
        DefaultMQProducer producer = spec.startedProducer();
        try {
            for (int i = 0; i < 6; i++) {
                Message message = message(spec, phase, "single", i, text("single " + phase + " " + i));
                message.setFlag(i);
                SendResult result = producer.send(message);
                sends.add(sent("single", message, result.getMsgId(), result, result.getQueueOffset()));
            }
            StringBuilder large = new StringBuilder();
            while (large.length() < 6000) {
                large.append("compressible text of phase ").append(phase).append("; ");
            }
            byte[] binary = new byte[5000];
            for (int i = 0; i < binary.length; i++) {
                binary[i] = (byte) (i % 251);
            }
            byte[][] bodies = everyKind ? new byte[][] {text(large.toString()), binary}
                : new byte[][] {binary};
            for (int i = 0; i < bodies.length; i++) {
                Message message = message(spec, phase, "large", i, bodies[i]);
                SendResult result = producer.send(message);
                sends.add(sent("large", message, result.getMsgId(), result, result.getQueueOffset()));
            }
            if (!everyKind) {
                Message pending = message(spec, phase, "pending", 0, text("pending " + phase));
                pending.setDelayTimeLevel(4);
                SendResult result = producer.send(pending);
                sends.add(sent("pending", pending, result.getMsgId(), result, -1));
                return;
            }
            List<Message> batch = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                batch.add(message(spec, phase, "batch", i, text("batch " + phase + " " + i)));
            }
            SendResult result = producer.send(batch);
            String[] ids = result.getMsgId().split(",");
            for (int i = 0; i < batch.size(); i++) {
                sends.add(sent("batch", batch.get(i), ids[i], result, result.getQueueOffset() + i));
            }
            Message delayed = message(spec, phase, "delayed", 0, text("delayed " + phase));
            delayed.setDelayTimeLevel(2);
            result = producer.send(delayed);
            sends.add(sent("delayed", delayed, result.getMsgId(), result, -1));
        } finally {
            producer.shutdown();
        }
        sendTransactions(spec, phase, sends);
    }

    static void sendTransactions(Spec spec, String phase, List<JSONObject> sends)
        throws Exception {
        TransactionMQProducer producer = spec.transactionProducer();
        producer.setProducerGroup(spec.group() + "-tx");
        producer.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message message, Object arg) {
                return (LocalTransactionState) arg;
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt message) {
                return message.getKeys().startsWith("commit")
                    ? LocalTransactionState.COMMIT_MESSAGE
                    : LocalTransactionState.ROLLBACK_MESSAGE;
            }
        });
        producer.start();
        try {
            Object[][] cases = {{"commit", LocalTransactionState.COMMIT_MESSAGE},
                {"rollback", LocalTransactionState.ROLLBACK_MESSAGE}};
            for (Object[] c : cases) {
                String kind = (String) c[0];
                Message message = message(spec, phase, kind, 0, text(kind + " " + phase));
                SendResult result = producer.sendMessageInTransaction(message, c[1]);
                sends.add(sent(kind, message, result.getMsgId(), result, -1));
            }
        } finally {
            producer.shutdown();
        }
    }

    /**
     * Consume the spec's topic with `group` until `expected` deliveries arrived, stop (the
     * consumer hands its offsets to the broker on shutdown), then wait until the broker holds
     * offsets at the end of every queue: everything up to there was processed, so the messages
     * returned are all this group got.  The first delivery of the message whose first key is
     * `retryKey` (when not null) is answered RECONSUME_LATER: the broker stores it again for
     * the group's retry topic, and its second delivery counts among the `expected`.
     */
    static List<MessageExt> consume(Spec spec, DefaultMQAdminExt admin, String group,
        int expected, String retryKey) throws Exception {
        DefaultMQPushConsumer consumer = spec.pushConsumer(group);
        consumer.subscribe(spec.topic(), "*");
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setConsumeMessageBatchMaxSize(1);
        Waits.Collector collector = new Waits.Collector();
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            collector.addAll(msgs);
            MessageExt first = msgs.get(0);
            if (retryKey != null && first.getReconsumeTimes() == 0
                && first.getKeys().startsWith(retryKey + " ")) {
                return ConsumeConcurrentlyStatus.RECONSUME_LATER;
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        long timeout = spec.seconds("timeout", 60);
        try {
            Waits.until(() -> collector.size() >= expected, timeout);
        } finally {
            consumer.shutdown();
        }
        if (!Waits.until(() -> caughtUp(admin, group, spec.topic()), 60_000)) {
            throw new IllegalStateException(group + " received " + collector.size() + " of "
                + expected + " and its offsets on the broker did not reach the queue ends");
        }
        return collector.snapshot();
    }

    /**
     * True when the broker's offsets of `group` on `topic` (all four queues) and on its retry
     * topic are at each queue's max offset.
     */
    static boolean caughtUp(DefaultMQAdminExt admin, String group, String topic) {
        try {
            ConsumeStats stats = admin.examineConsumeStats(group);
            int queues = 0;
            for (Map.Entry<MessageQueue, OffsetWrapper> e : stats.getOffsetTable().entrySet()) {
                OffsetWrapper w = e.getValue();
                if (w.getBrokerOffset() != w.getConsumerOffset()) {
                    return false;
                }
                if (e.getKey().getTopic().equals(topic)) {
                    queues++;
                }
            }
            return queues == 4;
        } catch (Exception e) {
            return false;
        }
    }
}

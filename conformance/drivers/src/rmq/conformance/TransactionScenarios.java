// Scenarios of TransactionMQProducer: half messages ended with COMMIT or ROLLBACK by the local
// transaction, and UNKNOW ones that the broker must check back (CHECK_TRANSACTION_STATE) until
// checkLocalTransaction decides them.  A consumer running throughout must receive exactly the
// committed messages; the check-backs must reach the unknown ones and only them.
package rmq.conformance;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.sysflag.MessageSysFlag;

final class TransactionScenarios {
    private static final String[] OUTCOMES = {"commit", "rollback", "unknown-commit",
        "unknown-rollback"};

    private static final String CHECK_TIMES = MessageConst.PROPERTY_TRANSACTION_CHECK_TIMES;

    private TransactionScenarios() {
    }

    /** The local transaction: the message's "outcome" property decides, checks count per key. */
    static final class Listener implements TransactionListener {
        final Map<String, Integer> checks = new ConcurrentHashMap<>();

        @Override
        public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
            switch (msg.getUserProperty("outcome")) {
                case "commit":
                    return LocalTransactionState.COMMIT_MESSAGE;
                case "rollback":
                    return LocalTransactionState.ROLLBACK_MESSAGE;
                default:
                    return LocalTransactionState.UNKNOW;
            }
        }

        @Override
        public LocalTransactionState checkLocalTransaction(MessageExt msg) {
            checks.merge(msg.getKeys(), 1, Integer::sum);
            return msg.getUserProperty("outcome").endsWith("commit")
                ? LocalTransactionState.COMMIT_MESSAGE : LocalTransactionState.ROLLBACK_MESSAGE;
        }
    }

    /**
     * `perOutcome` messages of each outcome (commit, rollback, unknown-commit,
     * unknown-rollback) sent in transactions while a consumer runs; the result lists what the
     * consumer got, the local states the sends returned and which messages were checked back.
     */
    static JSONObject outcomes(Spec spec) throws Exception {
        spec.createTopics();
        int perOutcome = spec.integer("perOutcome", 2);
        DefaultMQPushConsumer consumer = spec.pushConsumer(spec.group());
        consumer.subscribe(spec.topic(), "*");
        Waits.Collector collector = new Waits.Collector();
        ConsumerSupport.collectFromFirst(consumer, collector).start();
        Listener listener = new Listener();
        TransactionMQProducer producer = spec.transactionProducer();
        producer.setTransactionListener(listener);
        // The broker checks back through a channel it knows from the producer's heartbeats.
        producer.setHeartbeatBrokerInterval(1000);
        producer.start();
        JSONArray states = new JSONArray();
        JSONArray statuses = new JSONArray();
        List<MessageExt> received;
        try {
            for (int i = 0; i < perOutcome; i++) {
                for (String outcome : OUTCOMES) {
                    String key = outcome + "-" + i;
                    Message message = new Message(spec.topic(), "TagT", key,
                        ("tx " + key).getBytes(StandardCharsets.UTF_8));
                    message.putUserProperty("outcome", outcome);
                    TransactionSendResult result = producer.sendMessageInTransaction(message, null);
                    statuses.add(result.getSendStatus().name());
                    states.add(key + ":" + result.getLocalTransactionState().name());
                }
            }
            long timeout = spec.seconds("timeout", 60);
            Waits.until(() -> {
                for (int i = 0; i < perOutcome; i++) {
                    if (!listener.checks.containsKey("unknown-commit-" + i)
                        || !listener.checks.containsKey("unknown-rollback-" + i)) {
                        return false;
                    }
                }
                return collector.size() >= 2 * perOutcome;
            }, timeout);
            received = collector.await(2 * perOutcome, 0, spec.seconds("settleSeconds", 2));
        } finally {
            producer.shutdown();
            consumer.shutdown();
        }
        JSONObject out = Waits.Collector.summary(received);
        // How often a message was checked depends on timing: report only that it was.
        for (Object record : out.getJSONArray("messages")) {
            @SuppressWarnings("unchecked")
            Map<String, String> properties =
                (Map<String, String>) ((JSONObject) record).get("properties");
            properties.computeIfPresent(CHECK_TIMES, (k, v) -> Integer.parseInt(v) >= 1 ? ">=1" : v);
        }
        states.sort(null);
        out.put("localStates", states);
        out.put("statuses", statuses);
        JSONArray flags = new JSONArray();
        for (MessageExt m : received) {
            flags.add(m.getKeys() + ":" + MessageSysFlag.getTransactionValue(m.getSysFlag())
                + ":" + m.getProperty(MessageConst.PROPERTY_TRANSACTION_PREPARED));
        }
        flags.sort(null);
        out.put("transactionFlags", flags);
        JSONArray checked = new JSONArray();
        checked.addAll(new TreeSet<>(listener.checks.keySet()));
        out.put("checkedBack", checked);
        boolean unknownChecked = true;
        for (int i = 0; i < perOutcome; i++) {
            unknownChecked &= listener.checks.getOrDefault("unknown-commit-" + i, 0) >= 1;
            unknownChecked &= listener.checks.getOrDefault("unknown-rollback-" + i, 0) >= 1;
        }
        out.put("unknownCheckedBack", unknownChecked);
        return out;
    }
}

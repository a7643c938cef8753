// A scenario's input (the JSON object the harness writes on stdin) with typed accessors, and
// the client objects every scenario builds from it: producers, consumers and the admin client,
// each bound to the spec's name server with a unique instance name.
package rmq.conformance;

import com.alibaba.fastjson.JSONObject;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.ClientConfig;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.protocol.body.ClusterInfo;
import org.apache.rocketmq.common.protocol.route.BrokerData;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

final class Spec {
    private static final AtomicInteger INSTANCES = new AtomicInteger();

    final JSONObject json;

    Spec(JSONObject json) {
        this.json = json;
    }

    String namesrv() {
        return str("namesrv");
    }

    String topic() {
        return str("topic");
    }

    String group() {
        return str("group");
    }

    String str(String key) {
        String value = json.getString(key);
        if (value == null) {
            throw new IllegalArgumentException("spec has no " + key);
        }
        return value;
    }

    String str(String key, String otherwise) {
        String value = json.getString(key);
        return value == null ? otherwise : value;
    }

    int integer(String key, int otherwise) {
        Integer value = json.getInteger(key);
        return value == null ? otherwise : value;
    }

    long seconds(String key, double otherwise) {
        Double value = json.getDouble(key);
        return (long) ((value == null ? otherwise : value) * 1000);
    }

    boolean flag(String key) {
        Boolean value = json.getBoolean(key);
        return value != null && value;
    }

    String instance(String role) {
        return role + "-" + ProcessHandle.current().pid() + "-" + INSTANCES.incrementAndGet();
    }

    DefaultMQProducer producer() throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer(str("producerGroup", group() + "-producer"));
        configureProducer(producer);
        return producer;
    }

    /** producer(), started. */
    DefaultMQProducer startedProducer() throws Exception {
        DefaultMQProducer producer = producer();
        producer.start();
        return producer;
    }

    TransactionMQProducer transactionProducer() {
        TransactionMQProducer producer =
            new TransactionMQProducer(str("producerGroup", group() + "-producer"));
        configureProducer(producer);
        return producer;
    }

    /** A producer with `rpcHook` (null: none) and the client's message trace on or off. */
    DefaultMQProducer producer(RPCHook rpcHook, boolean enableMsgTrace) {
        DefaultMQProducer producer = new DefaultMQProducer(
            str("producerGroup", group() + "-producer"), rpcHook, enableMsgTrace, null);
        configureProducer(producer);
        return producer;
    }

    /**
     * The spec's "vipChannel" (send through the broker's fast port, listenPort - 2) when it
     * sets one; otherwise the client's own default stays.
     */
    void vipChannel(ClientConfig client) {
        if (json.containsKey("vipChannel")) {
            client.setVipChannelEnabled(flag("vipChannel"));
        }
    }

    private void configureProducer(DefaultMQProducer producer) {
        producer.setNamesrvAddr(namesrv());
        producer.setInstanceName(instance("producer"));
        producer.setSendMsgTimeout(integer("sendTimeoutMillis", 5000));
        producer.setRetryTimesWhenSendFailed(integer("retries", 2));
        vipChannel(producer);
        if (json.containsKey("compressOver")) {
            producer.setCompressMsgBodyOverHowmuch(integer("compressOver", 4096));
        }
    }

    DefaultMQPushConsumer pushConsumer(String group) {
        return pushConsumer(group, false);
    }

    /** A push consumer with the client's message trace on or off. */
    DefaultMQPushConsumer pushConsumer(String group, boolean enableMsgTrace) {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group, enableMsgTrace);
        consumer.setNamesrvAddr(namesrv());
        consumer.setInstanceName(instance("push"));
        vipChannel(consumer);
        consumer.setPersistConsumerOffsetInterval(1000);
        consumer.setPollNameServerInterval(1000);
        consumer.setHeartbeatBrokerInterval(1000);
        return consumer;
    }

    DefaultLitePullConsumer litePullConsumer(String group) {
        DefaultLitePullConsumer consumer = new DefaultLitePullConsumer(group);
        consumer.setNamesrvAddr(namesrv());
        consumer.setInstanceName(instance("lite"));
        vipChannel(consumer);
        consumer.setAutoCommitIntervalMillis(1000);
        consumer.setTopicMetadataCheckIntervalMillis(1000);
        return consumer;
    }

    @SuppressWarnings("deprecation")
    DefaultMQPullConsumer pullConsumer(String group) {
        DefaultMQPullConsumer consumer = new DefaultMQPullConsumer(group);
        consumer.setNamesrvAddr(namesrv());
        consumer.setInstanceName(instance("pull"));
        vipChannel(consumer);
        return consumer;
    }

    DefaultMQAdminExt admin() throws Exception {
        DefaultMQAdminExt admin = new DefaultMQAdminExt(integer("adminTimeoutMillis", 5000));
        admin.setNamesrvAddr(namesrv());
        admin.setInstanceName(instance("admin"));
        vipChannel(admin);
        admin.start();
        return admin;
    }

    /** Create `topic` with `queues` read and write queues on every master of the cluster. */
    void createTopic(String topic, int queues) throws Exception {
        DefaultMQAdminExt admin = admin();
        try {
            ClusterInfo cluster = admin.examineBrokerClusterInfo();
            for (BrokerData broker : cluster.getBrokerAddrTable().values()) {
                String master = broker.getBrokerAddrs().get(0L);
                if (master == null) {
                    continue;
                }
                TopicConfig config = new TopicConfig(topic, queues, queues, 6);
                admin.createAndUpdateTopicConfig(master, config);
            }
            Waits.forRoute(admin, topic, queues);
        } finally {
            admin.shutdown();
        }
    }

    /** The topics the spec asks for, created before the scenario starts ("topics": {name: queues}). */
    void createTopics() throws Exception {
        JSONObject topics = json.getJSONObject("topics");
        if (topics == null) {
            return;
        }
        for (String name : topics.keySet()) {
            createTopic(name, topics.getIntValue(name));
        }
    }

    static String[] split(String text) {
        return Arrays.stream(text.split(" ")).filter(s -> !s.isEmpty()).toArray(String[]::new);
    }
}

// Scenarios of DefaultMQProducer: sync, async, oneway and batch sends, each checked by reading
// everything back with a push consumer of a new group from the first offset.
package rmq.conformance;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

final class ProducerScenarios {
    private ProducerScenarios() {
    }

    /** Read every message of the spec's topic with a new push consumer group from the start. */
    static List<MessageExt> readBack(Spec spec, int expected) throws Exception {
        DefaultMQPushConsumer consumer = spec.pushConsumer(spec.group() + "-readback");
        consumer.subscribe(spec.topic(), "*");
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        Waits.Collector collector = new Waits.Collector();
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            collector.addAll(msgs);
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        try {
            return collector.await(expected, spec.seconds("timeout", 60), 500);
        } finally {
            consumer.shutdown();
        }
    }

    static JSONObject sync(Spec spec) throws Exception {
        spec.createTopics();
        int count = spec.integer("count", 20);
        DefaultMQProducer producer = spec.producer();
        producer.start();
        JSONArray statuses = new JSONArray();
        List<String> placed = new ArrayList<>();
        try {
            for (int i = 0; i < count; i++) {
                Message message = Records.numbered(spec.topic(), i, "TagA,TagB");
                SendResult result = producer.send(message);
                statuses.add(result.getSendStatus().name());
                placed.add(result.getMessageQueue().getQueueId() + "@" + result.getQueueOffset());
            }
        } finally {
            producer.shutdown();
        }
        List<MessageExt> received = readBack(spec, count);
        List<String> receivedAt = new ArrayList<>();
        for (MessageExt m : received) {
            receivedAt.add(m.getQueueId() + "@" + m.getQueueOffset());
        }
        JSONObject out = Waits.Collector.summary(received);
        out.put("statuses", statuses);
        out.put("denseOffsets", Records.denseOffsets(received));
        out.put("sentWhereReceived", receivedAt.containsAll(placed) && placed.containsAll(receivedAt));
        return out;
    }
}

// Scenario of the client's message trace (enableMsgTrace): a traced producer sends, a traced
// push consumer consumes, and each client's trace dispatcher sends its records (Pub for the
// send, SubBefore and SubAfter for the consumption) to the broker's trace topic
// RMQ_SYS_TRACE_TOPIC (created by the broker when traceTopicEnable is set).  A plain consumer
// reads the trace topic back and reports the records that name the messages this run sent.
package rmq.conformance;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.trace.TraceBean;
import org.apache.rocketmq.client.trace.TraceContext;
import org.apache.rocketmq.client.trace.TraceDataEncoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.topic.TopicValidator;

final class TraceScenarios {
    private TraceScenarios() {
    }

    /** Trace records of the messages whose unique ids are in `ids`, decoded from `traces`. */
    static List<TraceContext> mine(List<MessageExt> traces, Set<String> ids) {
        List<TraceContext> out = new ArrayList<>();
        for (MessageExt trace : traces) {
            String data = new String(trace.getBody(), StandardCharsets.UTF_8);
            for (TraceContext context : TraceDataEncoder.decoderFromTraceDataString(data)) {
                for (TraceBean bean : context.getTraceBeans()) {
                    if (ids.contains(bean.getMsgId())) {
                        out.add(context);
                        break;
                    }
                }
            }
        }
        return out;
    }

    static long count(List<TraceContext> contexts, String type) {
        return contexts.stream().filter(c -> c.getTraceType().name().equals(type)).count();
    }

    /** One line per trace record: type, group, region, success and the traced message's key. */
    static String describe(TraceContext context) {
        TraceBean bean = context.getTraceBeans().get(0);
        String line = context.getTraceType().name() + " group=" + context.getGroupName()
            + " success=" + context.isSuccess() + " keys=" + bean.getKeys();
        switch (context.getTraceType()) {
            case Pub:
                return line + " region=" + context.getRegionId() + " topic=" + bean.getTopic()
                    + " tags=" + bean.getTags() + " msgType=" + bean.getMsgType();
            case SubBefore:
                return line + " region=" + context.getRegionId() + " retryTimes="
                    + bean.getRetryTimes();
            default:
                return line;
        }
    }

    static JSONObject pubSub(Spec spec) throws Exception {
        spec.createTopics();
        int count = spec.integer("count", 3);
        long timeout = spec.seconds("timeout", 30);
        DefaultMQPushConsumer consumer = spec.pushConsumer(spec.group(), true);
        consumer.subscribe(spec.topic(), "*");
        Waits.Collector consumed = new Waits.Collector();
        ConsumerSupport.collectFromFirst(consumer, consumed).start();
        DefaultMQProducer producer = spec.producer(null, true);
        producer.start();
        Set<String> ids = new HashSet<>();
        DefaultMQPushConsumer reader = spec.pushConsumer(spec.group() + "-trace-reader");
        Waits.Collector traces = new Waits.Collector();
        JSONObject out = new JSONObject();
        try {
            for (int i = 0; i < count; i++) {
                SendResult result = producer.send(Records.numbered(spec.topic(), i, "TagA"));
                ids.add(result.getMsgId());
            }
            List<MessageExt> received = consumed.await(count, timeout, 0);
            out.put("consumed", received.size());
            reader.subscribe(TopicValidator.RMQ_SYS_TRACE_TOPIC, "*");
            ConsumerSupport.collectFromFirst(reader, traces).start();
            Waits.until(() -> {
                List<TraceContext> now = mine(traces.snapshot(), ids);
                return count(now, "Pub") >= count && count(now, "SubBefore") >= count
                    && count(now, "SubAfter") >= count;
            }, timeout);
            traces.await(0, 0, 500);
        } finally {
            reader.shutdown();
            producer.shutdown();
            consumer.shutdown();
        }
        List<TraceContext> records = mine(traces.snapshot(), ids);
        JSONObject types = new JSONObject(true);
        for (String type : new String[] {"Pub", "SubBefore", "SubAfter"}) {
            types.put(type, count(records, type));
        }
        out.put("traceTypes", types);
        TreeSet<String> described = new TreeSet<>();
        for (TraceContext context : records) {
            described.add(describe(context));
        }
        out.put("traceRecords", new JSONArray(new ArrayList<>(described)));
        TreeSet<String> traceTopics = new TreeSet<>();
        for (MessageExt trace : traces.snapshot()) {
            traceTopics.add(trace.getTopic());
        }
        out.put("traceMessageTopics", new JSONArray(new ArrayList<>(traceTopics)));
        return out;
    }
}

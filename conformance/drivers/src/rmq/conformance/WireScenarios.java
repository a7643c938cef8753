// Scenario of the Java client's wire options, observed from inside the client with an RPCHook:
// which request codes carried the sends (SEND_MESSAGE 10 with sendSmartMsg=false, else
// SEND_MESSAGE_V2 310; batches SEND_BATCH_MESSAGE 320), in which header serialization
// (JSON, or ROCKETMQ binary with -Drocketmq.serialize.type=ROCKETMQ) the requests went and the
// responses came back, and which broker port the sends reached (listenPort, or listenPort - 2,
// the fast port, with vipChannelEnabled).  The messages are then read back.
package rmq.conformance;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentSkipListSet;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

final class WireScenarios {
    private static final Set<Integer> SEND_CODES = Set.of(10, 310, 320);

    private WireScenarios() {
    }

    /** What the hook saw: send codes, serialize types both ways, the sends' remote ports. */
    static final class Recorder implements RPCHook {
        final Set<Integer> sendCodes = new ConcurrentSkipListSet<>();
        final Set<Integer> sendPorts = new ConcurrentSkipListSet<>();
        final Set<String> requestTypes = new ConcurrentSkipListSet<>();
        final Set<String> responseTypes = new ConcurrentSkipListSet<>();

        @Override
        public void doBeforeRequest(String remoteAddr, RemotingCommand request) {
            requestTypes.add(request.getSerializeTypeCurrentRPC().name());
            if (SEND_CODES.contains(request.getCode())) {
                sendCodes.add(request.getCode());
                sendPorts.add(port(remoteAddr));
            }
        }

        @Override
        public void doAfterResponse(String remoteAddr, RemotingCommand request,
            RemotingCommand response) {
            if (response != null) {
                responseTypes.add(response.getSerializeTypeCurrentRPC().name());
            }
        }
    }

    static int port(String addr) {
        return Integer.parseInt(addr.substring(addr.lastIndexOf(':') + 1));
    }

    /** One sync send and one batch of `batch` messages through a recorded producer. */
    static JSONObject send(Spec spec) throws Exception {
        spec.createTopics();
        int batch = spec.integer("batch", 3);
        Recorder recorder = new Recorder();
        DefaultMQProducer producer = spec.producer(recorder, false);
        producer.start();
        JSONArray statuses = new JSONArray();
        List<String> placed = new ArrayList<>();
        JSONObject out;
        int listenPort;
        try {
            SendResult single = producer.send(Records.numbered(spec.topic(), 0, "TagW"));
            statuses.add(single.getSendStatus().name());
            placed.add(single.getMessageQueue().getQueueId() + "@" + single.getQueueOffset());
            List<Message> messages = new ArrayList<>();
            for (int i = 1; i <= batch; i++) {
                messages.add(Records.numbered(spec.topic(), i, "TagW"));
            }
            SendResult batched = producer.send(messages);
            statuses.add(batched.getSendStatus().name());
            for (int i = 0; i < batch; i++) {
                placed.add(batched.getMessageQueue().getQueueId() + "@"
                    + (batched.getQueueOffset() + i));
            }
            out = ProducerScenarios.report(ProducerScenarios.readBack(spec, 1 + batch), placed);
            out.put("regionId", single.getRegionId());
            out.put("traceOn", single.isTraceOn());
            listenPort = port(producer.getDefaultMQProducerImpl().getmQClientFactory()
                .findBrokerAddressInPublish(single.getMessageQueue().getBrokerName()));
        } finally {
            producer.shutdown();
        }
        out.put("statuses", statuses);
        out.put("vipChannelEnabled", producer.isVipChannelEnabled());
        out.put("sendCodes", new JSONArray(new ArrayList<>(recorder.sendCodes)));
        out.put("requestSerializeTypes", new JSONArray(new ArrayList<>(recorder.requestTypes)));
        out.put("responseSerializeTypes", new JSONArray(new ArrayList<>(recorder.responseTypes)));
        TreeSet<Integer> below = new TreeSet<>();
        for (int sendPort : recorder.sendPorts) {
            below.add(listenPort - sendPort);
        }
        out.put("sendPortsBelowListenPort", new JSONArray(new ArrayList<>(below)));
        return out;
    }
}

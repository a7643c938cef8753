// Apache's six queue allocation strategies run on given inputs, no cluster involved: the
// expected values of rmq's strategies.  The spec is {"cases": [...]}; a case names a strategy
// (AVG, AVG_BY_CIRCLE, CONSISTENT_HASH with "virtualNodes", CONFIG with "config" queues,
// MACHINE_ROOM with "idcs", NEARBY with "inner" and the rooms "brokerRooms" {broker: room}
// and "clientRooms" {clientId: room}), the queues "mqAll" ([topic, broker, queueId]) and the
// clients "cidAll".  The answer has, per case, "name" (the strategy's getName()) and "shares":
// per client of cidAll its queues as [broker, queueId], or {"error": message} when allocate
// threw.
package rmq.conformance;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import org.apache.rocketmq.client.consumer.AllocateMessageQueueStrategy;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMachineRoomNearby;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragelyByCircle;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueByConfig;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueByMachineRoom;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueConsistentHash;
import org.apache.rocketmq.common.message.MessageQueue;

final class Allocations {
    private Allocations() {
    }

    static JSONObject run(Spec spec) {
        JSONArray answers = new JSONArray();
        for (Object item : spec.json.getJSONArray("cases")) {
            answers.add(allocateAll((JSONObject) item));
        }
        JSONObject result = new JSONObject();
        result.put("cases", answers);
        return result;
    }

    private static JSONObject allocateAll(JSONObject spec) {
        AllocateMessageQueueStrategy strategy = strategy(spec, spec.getString("strategy"));
        List<MessageQueue> mqAll = queues(spec.getJSONArray("mqAll"));
        List<String> cidAll = spec.getJSONArray("cidAll").toJavaList(String.class);
        JSONArray shares = new JSONArray();
        for (String cid : cidAll) {
            try {
                JSONArray share = new JSONArray();
                for (MessageQueue mq : strategy.allocate("G", cid, mqAll, cidAll)) {
                    JSONArray queue = new JSONArray();
                    queue.add(mq.getBrokerName());
                    queue.add(mq.getQueueId());
                    share.add(queue);
                }
                shares.add(share);
            } catch (RuntimeException e) {
                JSONObject error = new JSONObject();
                error.put("error", e.getMessage());
                shares.add(error);
            }
        }
        JSONObject answer = new JSONObject();
        answer.put("name", strategy.getName());
        answer.put("shares", shares);
        return answer;
    }

    private static AllocateMessageQueueStrategy strategy(JSONObject spec, String name) {
        switch (name) {
            case "AVG":
                return new AllocateMessageQueueAveragely();
            case "AVG_BY_CIRCLE":
                return new AllocateMessageQueueAveragelyByCircle();
            case "CONSISTENT_HASH":
                return new AllocateMessageQueueConsistentHash(spec.getIntValue("virtualNodes"));
            case "CONFIG":
                AllocateMessageQueueByConfig byConfig = new AllocateMessageQueueByConfig();
                byConfig.setMessageQueueList(queues(spec.getJSONArray("config")));
                return byConfig;
            case "MACHINE_ROOM":
                AllocateMessageQueueByMachineRoom byRoom = new AllocateMessageQueueByMachineRoom();
                byRoom.setConsumeridcs(
                    new HashSet<String>(spec.getJSONArray("idcs").toJavaList(String.class)));
                return byRoom;
            case "NEARBY":
                JSONObject brokerRooms = spec.getJSONObject("brokerRooms");
                JSONObject clientRooms = spec.getJSONObject("clientRooms");
                return new AllocateMachineRoomNearby(strategy(spec, spec.getString("inner")),
                    new AllocateMachineRoomNearby.MachineRoomResolver() {
                        @Override
                        public String brokerDeployIn(MessageQueue messageQueue) {
                            return brokerRooms.getString(messageQueue.getBrokerName());
                        }

                        @Override
                        public String consumerDeployIn(String clientID) {
                            return clientRooms.getString(clientID);
                        }
                    });
            default:
                throw new IllegalArgumentException("unknown strategy " + name);
        }
    }

    private static List<MessageQueue> queues(JSONArray rows) {
        List<MessageQueue> queues = new ArrayList<MessageQueue>();
        for (Object row : rows) {
            JSONArray fields = (JSONArray) row;
            queues.add(new MessageQueue(fields.getString(0), fields.getString(1),
                fields.getIntValue(2)));
        }
        return queues;
    }
}

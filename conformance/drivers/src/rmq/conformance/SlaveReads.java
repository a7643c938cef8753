// A consumer reading from one broker of a group by address (a slave): Apache's client API
// pulls the queue there, whatever the route says about the master.
package rmq.conformance;

import com.alibaba.fastjson.JSONObject;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.impl.CommunicationMode;
import org.apache.rocketmq.client.impl.MQClientManager;
import org.apache.rocketmq.client.impl.consumer.PullResultExt;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.common.filter.ExpressionType;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.protocol.header.PullMessageRequestHeader;
import org.apache.rocketmq.common.sysflag.PullSysFlag;

@SuppressWarnings("deprecation")
final class SlaveReads {
    private SlaveReads() {
    }

    /**
     * Pull queue `queue` of the topic from offset 0 (at most 32 messages) at broker address
     * `addr`: the pull status and the bodies found, as text.
     */
    static JSONObject pullFrom(Spec spec) throws Exception {
        DefaultMQPullConsumer consumer = spec.pullConsumer(spec.group());
        consumer.start();
        try {
            MQClientInstance instance = MQClientManager.getInstance().getOrCreateMQClientInstance(consumer);
            PullMessageRequestHeader header = new PullMessageRequestHeader();
            header.setConsumerGroup(spec.group());
            header.setTopic(spec.topic());
            header.setQueueId(spec.integer("queue", 0));
            header.setQueueOffset(0L);
            header.setMaxMsgNums(32);
            header.setSysFlag(PullSysFlag.buildSysFlag(false, false, true, false));
            header.setCommitOffset(0L);
            header.setSuspendTimeoutMillis(0L);
            header.setSubscription("*");
            header.setSubVersion(0L);
            header.setExpressionType(ExpressionType.TAG);
            PullResult result = instance.getMQClientAPIImpl().pullMessage(
                spec.str("addr"), header, 10000, CommunicationMode.SYNC, null);
            JSONObject out = new JSONObject(true);
            out.put("status", result.getPullStatus().name());
            List<String> bodies = new ArrayList<>();
            byte[] binary = ((PullResultExt) result).getMessageBinary();
            if (binary != null) {
                for (MessageExt message : MessageDecoder.decodes(ByteBuffer.wrap(binary))) {
                    bodies.add(new String(message.getBody(), StandardCharsets.UTF_8));
                }
            }
            out.put("bodies", bodies);
            out.put("suggestWhichBrokerId", ((PullResultExt) result).getSuggestWhichBrokerId());
            return out;
        } finally {
            consumer.shutdown();
        }
    }
}

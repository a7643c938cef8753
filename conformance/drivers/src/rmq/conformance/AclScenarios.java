// Plain ACL through Apache's own client classes: the signatures AclClientRPCHook puts on fixed
// requests (vectors for rmq's signer), and a producer and consumer carrying the hook against
// an ACL-enabled broker (the codes and remarks a refusal comes back with).
package rmq.conformance;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Map;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

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
}

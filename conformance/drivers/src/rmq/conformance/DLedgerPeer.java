package rmq.conformance;

import io.openmessaging.storage.dledger.DLedgerConfig;
import io.openmessaging.storage.dledger.DLedgerServer;
import io.openmessaging.storage.dledger.MemberState;
import io.openmessaging.storage.dledger.store.DLedgerStore;

/**
 * One node of DLedger 0.3.1.2 (the library RocketMQ 4.9.8's DLedger commitlog runs), for
 * groups that mix it with rmq's nodes.  Arguments: group, selfId, peers, store directory,
 * data file size, preferred leader ids ("" for none).  Every 200 ms it prints one line:
 * {@code STATE <role> <term> <leaderId> <ledgerEndIndex> <committedIndex>}.
 */
public final class DLedgerPeer {
    private DLedgerPeer() {
    }

    public static void main(String[] args) throws Exception {
        DLedgerConfig config = new DLedgerConfig();
        config.setGroup(args[0]);
        config.setSelfId(args[1]);
        config.setPeers(args[2]);
        config.setStoreBaseDir(args[3]);
        config.setMappedFileSizeForEntryData(Integer.parseInt(args[4]));
        config.setMappedFileSizeForEntryIndex(32 * 4096);
        if (!args[5].isEmpty()) {
            config.setPreferredLeaderIds(args[5]);
        }
        DLedgerServer server = new DLedgerServer(config);
        server.startup();
        DLedgerStore store = server.getdLedgerStore();
        while (true) {
            MemberState member = server.getMemberState();
            System.out.println("STATE " + member.getRole() + " " + member.currTerm() + " "
                + member.getLeaderId() + " " + store.getLedgerEndIndex() + " "
                + store.getCommittedIndex());
            System.out.flush();
            Thread.sleep(200);
        }
    }
}

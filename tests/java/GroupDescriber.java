// Describes one consumer group with Kafka's Java Admin client 3.9 (ConsumerGroupDescribe for
// KIP-848 groups, DescribeGroups for classic ones) and lists groups (ListGroups v5 with types).
// Prints "group <id> type <type> state <state> assignor <name>", then one line per member,
// sorted: "member <client id> epoch-free assigned <p,...> target <p,...>", then one line per
// listed group: "listed <id> <type> <state>".
// Arguments: bootstrap group
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.TopicPartition;

public class GroupDescriber {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        try (Admin admin = Admin.create(p)) {
            ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(args[1])).all().get().get(args[1]);
            System.out.println("group " + d.groupId() + " type " + d.type() + " state " + d.state()
                + " assignor " + d.partitionAssignor());
            List<String> lines = new ArrayList<>();
            for (MemberDescription m : d.members()) {
                String target = m.targetAssignment().map(a -> partitions(a.topicPartitions())).orElse("none");
                lines.add("member " + m.clientId() + " assigned " + partitions(m.assignment().topicPartitions())
                    + " target " + target);
            }
            Collections.sort(lines);
            lines.forEach(System.out::println);
            List<String> listed = new ArrayList<>();
            for (ConsumerGroupListing l : admin.listConsumerGroups().all().get()) {
                listed.add("listed " + l.groupId() + " " + l.type().map(Object::toString).orElse("?") + " "
                    + l.state().map(Object::toString).orElse("?"));
            }
            Collections.sort(listed);
            listed.forEach(System.out::println);
        }
    }

    private static String partitions(Set<TopicPartition> tps) {
        List<Integer> ps = new ArrayList<>();
        for (TopicPartition tp : tps) ps.add(tp.partition());
        Collections.sort(ps);
        StringBuilder sb = new StringBuilder();
        for (int q : ps) sb.append(sb.length() == 0 ? "" : ",").append(q);
        return sb.length() == 0 ? "-" : sb.toString();
    }
}

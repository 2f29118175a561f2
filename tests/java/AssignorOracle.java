// Runs Apache Kafka's own client-side assignors on problems read from stdin, for kafkalab's tests.
//
// Input, one problem after another:
//   CASE <assignor: range|roundrobin|sticky|cooperative-sticky>
//   TOPIC <name> <partition count> [<replica racks per partition: r0+r1/r2/->]   (repeated)
//   MEMBER <member id> <instance id|-> <generation> <topics a,b|-> <owned a:0,b:3|-> [<rack>|-]
//                                                                                  (repeated)
//   END
// Output, per problem in input order:
//   CASE <index>
//   ASSIGN <member id> <a:0,b:3|->                          (one per member)
//   END
// or, where Kafka's assignor throws, "CASE <index>", "ERROR <exception class>", "END".
// "BENCH <warm-up runs> <timed runs>" as the first line times the single problem that follows
// inside the JVM and prints "SECONDS <best of the timed runs>" after its assignment.
//
// Each problem gets a fresh assignor instance: the sticky assignors remember the largest
// generation they have seen. Members go into a HashMap in input order, as Kafka's leader builds it
// from the JoinGroup response. Only subscribed topics with partitions are passed, as
// AbstractPartitionAssignor.assign(Cluster, GroupSubscription) does, with one broker node per
// replica rack, through assignPartitions (the entry point that sees racks, KIP-881).

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.internals.AbstractPartitionAssignor;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;

public class AssignorOracle {
    static final class Problem {
        String assignor;
        Map<String, Integer> partitionsPerTopic = new LinkedHashMap<>();
        Map<String, String[]> replicaRacks = new HashMap<>();
        List<String[]> members = new ArrayList<>();
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintWriter out = new PrintWriter(System.out);
        int warmups = -1, timed = 0;
        Problem problem = null;
        int index = 0;
        String line;
        while ((line = in.readLine()) != null) {
            String[] parts = line.trim().split(" ");
            switch (parts[0]) {
                case "BENCH": warmups = Integer.parseInt(parts[1]); timed = Integer.parseInt(parts[2]); break;
                case "CASE": problem = new Problem(); problem.assignor = parts[1]; break;
                case "TOPIC":
                    problem.partitionsPerTopic.put(parts[1], Integer.parseInt(parts[2]));
                    if (parts.length > 3)
                        problem.replicaRacks.put(parts[1], parts[3].split("/"));
                    break;
                case "MEMBER": problem.members.add(parts); break;
                case "END":
                    Map<String, Subscription> subscriptions = subscriptions(problem);
                    Map<String, List<PartitionInfo>> counts = partitionInfos(problem, subscriptions);
                    Map<String, List<TopicPartition>> result = null;
                    try {
                    for (int i = 0; i < Math.max(warmups, 0); i++)
                        assignor(problem.assignor).assignPartitions(counts, subscriptions(problem));
                    long best = Long.MAX_VALUE;
                    for (int i = 0; i < Math.max(timed, 1); i++) {
                        Map<String, Subscription> fresh = subscriptions(problem);
                        long start = System.nanoTime();
                        result = assignor(problem.assignor).assignPartitions(counts, fresh);
                        best = Math.min(best, System.nanoTime() - start);
                    }
                    print(out, index, problem, result);
                    if (warmups >= 0)
                        out.println("SECONDS " + (best / 1e9));
                    } catch (RuntimeException e) {
                        // Kafka's assignor itself failed on this input: report it, go on.
                        out.println("CASE " + index);
                        out.println("ERROR " + e.getClass().getSimpleName());
                        out.println("END");
                    }
                    index++;
                    break;
                default:
                    if (!parts[0].isEmpty())
                        throw new IllegalArgumentException("unknown line: " + line);
            }
        }
        out.flush();
    }

    static AbstractPartitionAssignor assignor(String name) {
        switch (name) {
            case "range": return new RangeAssignor();
            case "roundrobin": return new RoundRobinAssignor();
            case "sticky": return new StickyAssignor();
            case "cooperative-sticky": return new CooperativeStickyAssignor();
            default: throw new IllegalArgumentException("unknown assignor " + name);
        }
    }

    static Map<String, Subscription> subscriptions(Problem problem) {
        Map<String, Subscription> subscriptions = new HashMap<>();
        for (String[] m : problem.members) {
            int generation = Integer.parseInt(m[3]);
            List<String> topics = m[4].equals("-") ? new ArrayList<>() : new ArrayList<>(List.of(m[4].split(",")));
            List<TopicPartition> owned = new ArrayList<>();
            if (!m[5].equals("-"))
                for (String tp : m[5].split(",")) {
                    int colon = tp.lastIndexOf(':');
                    owned.add(new TopicPartition(tp.substring(0, colon), Integer.parseInt(tp.substring(colon + 1))));
                }
            ByteBuffer userData = null;
            if (problem.assignor.equals("sticky") && (!owned.isEmpty() || generation >= 0))
                userData = stickyUserData(owned, generation);
            Optional<String> rack = m.length > 6 && !m[6].equals("-") ? Optional.of(m[6]) : Optional.empty();
            Subscription subscription = new Subscription(topics, userData, owned, generation, rack);
            if (!m[2].equals("-"))
                subscription.setGroupInstanceId(Optional.of(m[2]));
            subscriptions.put(m[1], subscription);
        }
        return subscriptions;
    }

    // StickyAssignor's user data v1: [topic:string partitions:[int32]] generation:int32,
    // partitions grouped by topic in first-seen order.
    static ByteBuffer stickyUserData(List<TopicPartition> owned, int generation) {
        Map<String, List<Integer>> byTopic = new LinkedHashMap<>();
        for (TopicPartition tp : owned)
            byTopic.computeIfAbsent(tp.topic(), t -> new ArrayList<>()).add(tp.partition());
        int size = 4 + 4;
        for (Map.Entry<String, List<Integer>> e : byTopic.entrySet())
            size += 2 + e.getKey().getBytes(StandardCharsets.UTF_8).length + 4 + 4 * e.getValue().size();
        ByteBuffer buffer = ByteBuffer.allocate(size);
        buffer.putInt(byTopic.size());
        for (Map.Entry<String, List<Integer>> e : byTopic.entrySet()) {
            byte[] name = e.getKey().getBytes(StandardCharsets.UTF_8);
            buffer.putShort((short) name.length).put(name).putInt(e.getValue().size());
            for (int p : e.getValue())
                buffer.putInt(p);
        }
        buffer.putInt(generation);
        buffer.flip();
        return buffer;
    }

    static Map<String, List<PartitionInfo>> partitionInfos(Problem problem, Map<String, Subscription> subscriptions) {
        Set<String> topics = new HashSet<>();
        for (Subscription s : subscriptions.values())
            topics.addAll(s.topics());
        Map<String, List<PartitionInfo>> infos = new HashMap<>();
        for (Map.Entry<String, Integer> e : problem.partitionsPerTopic.entrySet()) {
            if (!topics.contains(e.getKey()) || e.getValue() <= 0)
                continue;
            String[] racks = problem.replicaRacks.get(e.getKey());
            List<PartitionInfo> partitions = new ArrayList<>();
            for (int p = 0; p < e.getValue(); p++) {
                List<Node> replicas = new ArrayList<>();
                if (racks != null && !racks[p].equals("-"))
                    for (String rack : racks[p].split("\\+"))
                        replicas.add(new Node(replicas.size(), "broker-" + rack, 9092, rack));
                Node[] nodes = replicas.toArray(new Node[0]);
                partitions.add(new PartitionInfo(e.getKey(), p, nodes.length > 0 ? nodes[0] : Node.noNode(), nodes, nodes));
            }
            infos.put(e.getKey(), partitions);
        }
        return infos;
    }

    static void print(PrintWriter out, int index, Problem problem, Map<String, List<TopicPartition>> result) {
        out.println("CASE " + index);
        for (String[] m : problem.members) {
            List<TopicPartition> tps = result.getOrDefault(m[1], new ArrayList<>());
            StringBuilder text = new StringBuilder();
            for (TopicPartition tp : tps) {
                if (text.length() > 0)
                    text.append(',');
                text.append(tp.topic()).append(':').append(tp.partition());
            }
            out.println("ASSIGN " + m[1] + " " + (text.length() == 0 ? "-" : text.toString()));
        }
        out.println("END");
    }
}

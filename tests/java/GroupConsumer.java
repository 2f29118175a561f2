// Three members of one group, each a Kafka Java client KafkaConsumer (classic protocol) on its
// own thread. Each polls until the group has read `expected` records in total, then commits
// synchronously. Prints one line per member: "member <i> partitions <p,...> read <n>", then
// "committed <partition>=<offset> ..." as the first member's committed() sees it.
import java.time.Duration;
import java.util.*;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;

public class GroupConsumer {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2];
        int expected = Integer.parseInt(args[3]);
        AtomicInteger total = new AtomicInteger();
        List<KafkaConsumer<byte[], byte[]>> consumers = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            Properties p = new Properties();
            p.put("bootstrap.servers", bootstrap);
            p.put("group.id", group);
            p.put("auto.offset.reset", "earliest");
            p.put("enable.auto.commit", "false");
            p.put("session.timeout.ms", "6000");
            p.put("heartbeat.interval.ms", "500");
            p.put("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
            p.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
            consumers.add(new KafkaConsumer<>(p));
        }
        List<Thread> threads = new ArrayList<>();
        String[] lines = new String[3];
        long deadline = System.currentTimeMillis() + 20_000;
        for (int i = 0; i < 3; i++) {
            final int index = i;
            Thread t = new Thread(() -> {
                KafkaConsumer<byte[], byte[]> c = consumers.get(index);
                c.subscribe(List.of(topic));
                int read = 0;
                while (total.get() < expected && System.currentTimeMillis() < deadline) {
                    int n = c.poll(Duration.ofMillis(100)).count();
                    read += n;
                    total.addAndGet(n);
                }
                c.commitSync();
                List<Integer> owned = new ArrayList<>();
                for (TopicPartition tp : c.assignment()) owned.add(tp.partition());
                Collections.sort(owned);
                lines[index] = "member " + index + " partitions " + owned + " read " + read;
            });
            threads.add(t);
            t.start();
        }
        for (Thread t : threads) t.join();
        for (String line : lines) System.out.println(line);
        KafkaConsumer<byte[], byte[]> first = consumers.get(0);
        Set<TopicPartition> all = new HashSet<>();
        for (int p = 0; p < 6; p++) all.add(new TopicPartition(topic, p));
        StringBuilder sb = new StringBuilder("committed");
        Map<TopicPartition, OffsetAndMetadata> committed = first.committed(all);
        for (int p = 0; p < 6; p++) {
            OffsetAndMetadata om = committed.get(new TopicPartition(topic, p));
            sb.append(" ").append(p).append("=").append(om == null ? -1 : om.offset());
        }
        System.out.println(sb);
        for (KafkaConsumer<byte[], byte[]> c : consumers) c.close(Duration.ofSeconds(5));
    }
}

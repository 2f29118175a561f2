// Prints the user data Kafka's Java sticky assignors put into a subscription, for kafkalab's tests.
//
// Input lines:   STICKY <generation> <owned a:0,b:3|->      or      COOPERATIVE <generation>
// Output lines:  the user data as lowercase hex ("-" for none), one per input line.
// Each line uses a fresh assignor told, through onAssignment, its assignment and generation.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.clients.consumer.internals.AbstractStickyAssignor;
import org.apache.kafka.common.TopicPartition;

public class UserDataOracle {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        String line;
        while ((line = in.readLine()) != null) {
            String[] parts = line.trim().split(" ");
            if (parts[0].isEmpty())
                continue;
            int generation = Integer.parseInt(parts[1]);
            List<TopicPartition> owned = new ArrayList<>();
            if (parts.length > 2 && !parts[2].equals("-"))
                for (String tp : parts[2].split(",")) {
                    int colon = tp.lastIndexOf(':');
                    owned.add(new TopicPartition(tp.substring(0, colon), Integer.parseInt(tp.substring(colon + 1))));
                }
            AbstractStickyAssignor assignor = parts[0].equals("STICKY") ? new StickyAssignor() : new CooperativeStickyAssignor();
            assignor.onAssignment(new Assignment(owned), new ConsumerGroupMetadata("group", generation, "member", Optional.empty()));
            ByteBuffer data = assignor.subscriptionUserData(new HashSet<>());
            out.append(hex(data)).append('\n');
        }
        System.out.print(out);
    }

    static String hex(ByteBuffer data) {
        if (data == null)
            return "-";
        StringBuilder text = new StringBuilder();
        while (data.hasRemaining())
            text.append(String.format("%02x", data.get()));
        return text.toString();
    }
}

import org.apache.rocketmq.common.UtilAll;

/** mqadmin resetOffsetByTime's reading of a time (ResetOffsetByTimeCommand, 4.9.7): Long.parseLong, else
 *  UtilAll.parseDate(text, "yyyy-MM-dd#HH:mm:ss:SSS") in the JVM's default zone. One line per argument: its epoch
 *  milliseconds, or "null" where neither reads it. */
public class ParseDate {
    public static void main(String[] args) {
        for (String text : args) {
            Long ms;
            try {
                ms = Long.parseLong(text);
            } catch (NumberFormatException e) {
                java.util.Date date = UtilAll.parseDate(text, UtilAll.YYYY_MM_DD_HH_MM_SS_SSS);
                ms = date == null ? null : date.getTime();
            }
            System.out.println(ms);
        }
    }
}

import com.alibaba.fastjson.JSON;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;

/** Each file named on the command line as ConfigManager's decode parses it (fastjson 1.2.83's JSON.parseObject
 * with its default features): one line per file, "OK " and the document as JSON, or "FAIL". */
public class FastjsonParse {
    public static void main(String[] args) throws Exception {
        for (String file : args) {
            String text = new String(Files.readAllBytes(Paths.get(file)), StandardCharsets.UTF_8);
            try {
                System.out.println("OK " + JSON.toJSONString(JSON.parseObject(text)));
            } catch (RuntimeException e) {
                System.out.println("FAIL");
            }
        }
    }
}

import java.nio.charset.StandardCharsets;
import java.io.*;
// new String(bytes, UTF_8) of each hex line on stdin, printed as its UTF-16 code units in hex (tests/test_rules.py)
public class Utf8Decode {
  public static void main(String[] a) throws Exception {
    BufferedReader r = new BufferedReader(new InputStreamReader(System.in));
    StringBuilder out = new StringBuilder();
    String line;
    while ((line = r.readLine()) != null) {
      byte[] b = new byte[line.length()/2];
      for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(line.substring(2*i, 2*i+2), 16);
      String s = new String(b, StandardCharsets.UTF_8);
      StringBuilder h = new StringBuilder();
      for (int i = 0; i < s.length(); i++) h.append(String.format("%04x", (int) s.charAt(i)));
      out.append(h).append('\n');
    }
    System.out.print(out);
  }
}

#!/usr/bin/env python3
"""Writes the small PDFs the PDF reader is tested on (tests/fixtures/pdf/, tests/engine_pdf.rs) and
the e2e and bench files (tests/e2e/fixtures/). Each is built the way a PDF writer builds one:
objects, a cross-reference table at their byte offsets, a trailer.

  plain.pdf       two pages, Helvetica (WinAnsi), uncompressed, Td/T*/TJ line and word breaks
  flate.pdf       one page whose content stream is FlateDecode
  a85.pdf         one page whose content stream is [/ASCII85Decode /FlateDecode] (PostScript-era writers)
  tounicode.pdf   a Type0 font with Identity-H two-byte codes and a ToUnicode CMap (bfchar, bfrange)
  differences.pdf a simple font with an /Encoding /Differences naming glyphs (fi ligature, quotes)
  objstm.pdf      pages and fonts packed in an object stream (PDF 1.5), a form XObject holding text
  encrypted.pdf   a trailer naming an /Encrypt dictionary
  scanned.pdf     a page that only paints an image (no text layer)
  nomap.pdf       a Type0 font without a ToUnicode map (text that cannot be read)
  bomb.pdf        a content stream inflating to 80 MB of spaces
  deep.pdf        an array nested 10,000 deep
  wide.pdf        a content stream inflating to 60 MB of one `[0 0 …] TJ` (issue 43: refused, bounded)
  widemap.pdf     a font whose ToUnicode map inflates to 60 MB of one `[0 0 …]`
  flood.pdf       a content stream inflating to 12 MB of `[0 0 …] TJ` arrays of 50,000 zeros each
  forms.pdf       a form XObject that draws itself 20 times (a billion laughs of forms)
  fifty.pdf       50 pages of text, FlateDecode (the e2e test and `make bench`'s attach_pdf_ms)
and two from real writers, when they are there (each kept as committed otherwise):
  cairo.pdf       cairo's PDF surface (Debian's python3-cairo: run with /usr/bin/python3)
  chromium.pdf    Chromium's print to PDF (Playwright from tests/e2e/node_modules, /usr/bin/chromium)
Usage: python3 scripts/make-pdf-fixtures.py  (from the repository root)
"""
import os
import zlib

OUT = "tests/fixtures/pdf"
E2E = "tests/e2e/fixtures"


def pdf(objects, trailer_extra=b"", version=b"1.4"):
    """objects: list of bytes, object i+1 is objects[i] (without the `N 0 obj` wrapper)."""
    out = bytearray(b"%PDF-" + version + b"\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, body in enumerate(objects):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % (i + 1) + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for o in offsets:
        out += b"%010d 00000 n \n" % o
    out += b"trailer\n<< /Size %d /Root 1 0 R %s>>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        trailer_extra,
        xref,
    )
    return bytes(out)


def stream(data, extra=b"", compress=False):
    if compress:
        data = zlib.compress(data, 9)
        extra += b" /Filter /FlateDecode"
    return b"<< /Length %d%s >>\nstream\n" % (len(data), extra) + data + b"\nendstream"


HELV = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"


def simple_doc(contents, font=HELV, compress=False):
    """A catalog, a page tree of len(contents) pages sharing one font, and their streams."""
    n = len(contents)
    kids = b" ".join(b"%d 0 R" % (4 + 2 * i) for i in range(n))
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d /Resources << /Font << /F1 3 0 R >> >> >>" % (kids, n),
        font,
    ]
    for i, c in enumerate(contents):
        objs.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R >>" % (5 + 2 * i))
        objs.append(stream(c, compress=compress))
    return objs


PLAIN_1 = b"""BT /F1 12 Tf 72 720 Td (Quarterly report) Tj 0 -16 Td (Revenue grew by 12%, costs fell.) Tj
T* [(Word)-300(gap)] TJ ET"""
PLAIN_2 = b"BT /F1 12 Tf 72 720 Td (Second page: caf\\351 \\(open\\)) Tj ET"


def a85():
    import base64

    data = base64.a85encode(zlib.compress(b"BT /F1 12 Tf 72 720 Td (Armoured text) Tj ET", 9), adobe=True)
    objs = simple_doc([b""])
    objs[-1] = b"<< /Length %d /Filter [/ASCII85Decode /FlateDecode] >>\nstream\n" % len(data) + data + b"\nendstream"
    return pdf(objs)


def tounicode():
    cmap = b"""/CIDInit /ProcSet findresource begin 12 dict begin begincmap
/CMapName /Adobe-Identity-UCS def /CMapType 2 def
1 begincodespacerange <0000> <FFFF> endcodespacerange
2 beginbfchar <0003> <0020> <0010> <00E9> endbfchar
1 beginbfrange <0024> <003D> <0041> endbfrange
1 beginbfrange <0044> <005D> <0061> endbfrange
endcmap CMapName currentdict /CMap defineresource pop end end"""
    # "Hello Zoe" with Zoe's e accented: H=0x2B (0x24 + 7), e=0x48 (0x44 + 4)...
    def code(ch):
        if ch == " ":
            return b"0003"
        if ch == "\u00e9":
            return b"0010"
        if ch.isupper():
            return b"%04X" % (0x24 + ord(ch) - ord("A"))
        return b"%04X" % (0x44 + ord(ch) - ord("a"))

    text = "Hello Zo\u00e9"
    hexs = b"".join(code(c) for c in text)
    content = b"BT /F1 11 Tf 1 0 0 1 72 700 Tm <%s> Tj 1 0 0 1 72 680 Tm <%s> Tj ET" % (
        hexs,
        b"".join(code(c) for c in "Unicode map"),
    )
    font = b"<< /Type /Font /Subtype /Type0 /BaseFont /ABC+Sans /Encoding /Identity-H /DescendantFonts [6 0 R] /ToUnicode 7 0 R >>"
    objs = simple_doc([content], font=font)
    objs.append(b"<< /Type /Font /Subtype /CIDFontType2 /BaseFont /ABC+Sans /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> >>")
    objs.append(stream(cmap, compress=True))
    return pdf(objs)


def differences():
    font = b"<< /Type /Font /Subtype /Type1 /BaseFont /Times-Roman /Encoding << /Type /Encoding /BaseEncoding /WinAnsiEncoding /Differences [1 /fi /quoteright /uni20AC] >> >>"
    return pdf(simple_doc([b"BT /F1 12 Tf 72 720 Td (\\001nance isn\\002t \\0035) Tj ET"], font=font))


def objstm():
    """Catalog and page in an object stream; the page's text in a form XObject."""
    packed = [
        (1, b"<< /Type /Catalog /Pages 2 0 R >>"),
        (2, b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
        (3, b"<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 4 0 R >> /XObject << /X1 6 0 R >> >> /Contents 5 0 R >>"),
        (4, HELV),
    ]
    head, body = b"", b""
    for num, obj in packed:
        head += b"%d %d " % (num, len(body))
        body += obj + b"\n"
    data = head + body
    form = stream(b"BT /F1 10 Tf 72 600 Td (Inside a form) Tj ET", extra=b" /Type /XObject /Subtype /Form /BBox [0 0 612 792]")
    objs = [
        None, None, None, None,
        stream(b"BT /F1 12 Tf 72 720 Td (Packed objects) Tj ET q /X1 Do Q", compress=True),
        form,
        stream(data, extra=b" /Type /ObjStm /N %d /First %d" % (len(packed), len(head)), compress=True),
    ]
    out = bytearray(b"%PDF-1.5\n")
    for i, body in enumerate(objs):
        if body is not None:
            out += b"%d 0 obj\n" % (i + 1) + body + b"\nendobj\n"
    out += b"trailer\n<< /Size 8 /Root 1 0 R >>\n%%EOF\n"
    return bytes(out)


def encrypted():
    objs = simple_doc([b"BT /F1 12 Tf 72 720 Td (secret) Tj ET"])
    objs.append(b"<< /Filter /Standard /V 2 /R 3 /Length 128 /P -1028 /O <00> /U <00> >>")
    return pdf(objs, trailer_extra=b"/Encrypt %d 0 R " % len(objs))


def scanned():
    img = stream(b"\x80" * 64, extra=b" /Type /XObject /Subtype /Image /Width 8 /Height 8 /ColorSpace /DeviceGray /BitsPerComponent 8")
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /Resources << /XObject << /Im1 5 0 R >> >> /Contents 4 0 R >>",
        stream(b"q 612 0 0 792 0 0 cm /Im1 Do Q"),
        img,
    ]
    return pdf(objs)


def nomap():
    font = b"<< /Type /Font /Subtype /Type0 /BaseFont /XYZ /Encoding /Identity-H /DescendantFonts [] >>"
    return pdf(simple_doc([b"BT /F1 12 Tf 72 720 Td <002B00480051> Tj ET"], font=font))


def bomb():
    return pdf(simple_doc([b"BT /F1 12 Tf (x) Tj ET" + b" " * (80 * 1024 * 1024)], compress=True))


def wide():
    return pdf(simple_doc([b"BT /F1 12 Tf [" + b"0 " * (30 * 1024 * 1024) + b"] TJ ET"], compress=True))


def widemap():
    font = b"<< /Type /Font /Subtype /Type0 /BaseFont /ABC /Encoding /Identity-H /DescendantFonts [] /ToUnicode 6 0 R >>"
    objs = simple_doc([b"BT /F1 12 Tf <0001> Tj ET"], font=font)
    objs.append(stream(b"begincmap [" + b"0 " * (30 * 1024 * 1024) + b"] endcmap", compress=True))
    return pdf(objs)


def flood():
    line = b"[" + b"0 " * 50_000 + b"] TJ\n"
    return pdf(simple_doc([b"BT /F1 12 Tf (x) Tj " + line * (12 * 1024 * 1024 // len(line)) + b"ET"], compress=True))


def deep():
    return pdf([b"<< /Type /Catalog /Pages " + b"[" * 10_000 + b"]" * 10_000 + b" >>"])


def forms():
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /Resources 6 0 R /Contents 4 0 R >>",
        stream(b"/X1 Do"),
        stream(b"BT /F1 12 Tf (again) Tj ET " + b"/X1 Do " * 20, extra=b" /Type /XObject /Subtype /Form /BBox [0 0 9 9] /Resources 6 0 R"),
        b"<< /Font << /F1 7 0 R >> /XObject << /X1 5 0 R >> >>",
        HELV,
    ]
    return pdf(objs)


SENTENCES = [
    "The committee met on the first Monday of the month to review the budget.",
    "Revenue from the northern region rose while costs in the south held steady.",
    "Each department submitted a plan for the next quarter with its staffing needs.",
    "The board asked for a summary of risks and the measures taken against them.",
]


def fifty():
    pages = []
    for p in range(50):
        lines = [b"BT /F1 10 Tf 72 740 Td 14 TL (Page %d of the annual report) Tj" % (p + 1)]
        for i in range(44):
            s = SENTENCES[(p + i) % len(SENTENCES)]
            lines.append(b"T* (%s Line %d.) Tj" % (s.encode(), i + 1))
        lines.append(b"ET")
        pages.append(b"\n".join(lines))
    return pdf(simple_doc(pages, compress=True))


def cairo_pdf(path):
    try:
        import cairo
    except ImportError:
        print("skipped cairo.pdf (no python3-cairo: run with /usr/bin/python3)")
        return
    surface = cairo.PDFSurface(path, 595, 842)
    c = cairo.Context(surface)
    c.select_font_face("DejaVu Sans")
    c.set_font_size(14)
    y = 60
    for line in [
        "Cairo writes this page.",
        "Ligatures: office, fluff, affine \u2014 \u201cquotes\u201d and caf\u00e9.",
        "Zweite Zeile: Gr\u00fc\u00dfe aus K\u00f6ln.",
    ]:
        c.move_to(50, y)
        c.show_text(line)
        y += 24
    c.show_page()
    c.move_to(50, 60)
    c.show_text("Page two of the cairo file.")
    c.show_page()
    surface.finish()


CHROMIUM = r"""
import { chromium } from 'playwright-core';
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
const page = await browser.newPage();
await page.setContent(`<html><body style="font-family: sans-serif"><h1>Chromium prints this</h1>
<p>A paragraph with office, fluff and a caf\u00e9 \u2014 \u201cquoted\u201d.</p>
<p style="page-break-before: always">Second page from Chromium.</p></body></html>`);
await page.pdf({ path: process.argv[1], format: 'A4' });
await browser.close();
"""


def chromium_pdf(path):
    import subprocess

    try:
        subprocess.run(["node", "--input-type=module", "-e", CHROMIUM, os.path.abspath(path)], cwd="tests/e2e", check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print("skipped chromium.pdf:", e)


def main():
    os.makedirs(OUT, exist_ok=True)
    os.makedirs(E2E, exist_ok=True)
    files = {
        "plain.pdf": pdf(simple_doc([PLAIN_1, PLAIN_2])),
        "flate.pdf": pdf(simple_doc([b"BT /F1 12 Tf 72 720 Td (Compressed words) Tj ET"], compress=True)),
        "tounicode.pdf": tounicode(),
        "a85.pdf": a85(),
        "differences.pdf": differences(),
        "objstm.pdf": objstm(),
        "encrypted.pdf": encrypted(),
        "scanned.pdf": scanned(),
        "nomap.pdf": nomap(),
        "bomb.pdf": bomb(),
        "deep.pdf": deep(),
        "wide.pdf": wide(),
        "widemap.pdf": widemap(),
        "flood.pdf": flood(),
        "forms.pdf": forms(),
    }
    for name, data in files.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    with open(os.path.join(E2E, "fifty.pdf"), "wb") as f:
        f.write(fifty())
    cairo_pdf(os.path.join(OUT, "cairo.pdf"))
    chromium_pdf(os.path.join(OUT, "chromium.pdf"))
    print("wrote", len(files), "fixtures to", OUT, "and fifty.pdf to", E2E)


if __name__ == "__main__":
    main()

/* Messages on stderr: formatted on the stack and written with write(2), so they
 * work inside malloc, before init and in a forked child. */
#include "internal.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define CORRAL_MAX_WARNINGS 32

static atomic_int warnings_left = CORRAL_MAX_WARNINGS;

static void write_all(int fd, const char *buf, size_t len)
{
  while (len > 0) {
    ssize_t n = write(fd, buf, len);
    if (n <= 0) return;             /* nothing sensible to do about it */
    buf += n;
    len -= (size_t)n;
  }
}

/* prefix + formatted text + newline, truncated to one 512-byte line. */
static void emit_line(const char *prefix, const char *fmt, va_list ap)
{
  char line[512];
  int n = snprintf(line, sizeof line, "%s", prefix);
  int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
  size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
  if (len > sizeof line - 2) len = sizeof line - 2;
  line[len++] = '\n';
  write_all(2, line, len);
}

void _corral_warn(const char *fmt, ...)
{
  if (atomic_fetch_sub_explicit(&warnings_left, 1, memory_order_relaxed) <= 0) return;
  va_list ap;
  va_start(ap, fmt);
  emit_line("corral: warning: ", fmt, ap);
  va_end(ap);
}

void _corral_note(int level, const char *fmt, ...)
{
  if (_corral_options.verbose < level) return;
  va_list ap;
  va_start(ap, fmt);
  emit_line("corral: ", fmt, ap);
  va_end(ap);
}

/* Output to one fd may be held and written in one go: the processes of a
 * pipeline exit together, and statistics tables written line by line would
 * interleave. Used once per process, at exit. */
static char held[16384];
static size_t held_len;
static int held_fd = -1;

void _corral_hold(int fd)
{
  held_fd = fd;
  held_len = 0;
}

void _corral_release(void)
{
  if (held_fd >= 0) write_all(held_fd, held, held_len);
  held_fd = -1;
  held_len = 0;
}

static void out(int fd, const char *buf, size_t len)
{
  if (fd != held_fd) {
    write_all(fd, buf, len);
    return;
  }
  if (held_len + len > sizeof held) {
    write_all(fd, held, held_len);
    held_len = 0;
  }
  if (len > sizeof held) {
    write_all(fd, buf, len);
    return;
  }
  memcpy(held + held_len, buf, len);
  held_len += len;
}

void _corral_fdprintf(int fd, const char *fmt, ...)
{
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  out(fd, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

void _corral_json_string(int fd, const char *s)
{
  char buf[512];
  size_t n = 0;
  buf[n++] = '"';
  for (; s && *s; s++) {
    if (n > sizeof buf - 8) { out(fd, buf, n); n = 0; }
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') { buf[n++] = '\\'; buf[n++] = (char)ch; }
    else if (ch < 0x20) n += (size_t)snprintf(buf + n, 7, "\\u%04x", ch);
    else buf[n++] = (char)ch;
  }
  buf[n++] = '"';
  out(fd, buf, n);
}

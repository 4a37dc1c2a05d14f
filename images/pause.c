/*
 * The pod sandbox's placeholder process: it holds the pod's namespaces open, and as PID 1 of a
 * shared PID namespace it reaps the zombies that other containers leave behind.
 * Built static (gcc -static -O2) so the image needs nothing but this one file.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig) {
  /* The runtime stops a sandbox with SIGTERM, or SIGINT by hand: both are a clean exit. */
  (void)sig;
  _exit(0);
}

static void on_child(int sig) {
  (void)sig;
  int saved = errno; /* a handler must not clobber errno for the code it interrupted */
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
  errno = saved;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "-v") == 0) {
    puts("tskubelet pause 3.9");
    return 0;
  }
  if (getpid() != 1) {
    /* Still useful outside a PID namespace, but then it reaps only its own children. */
    fputs("pause: warning: not running as PID 1\n", stderr);
  }

  struct sigaction stop = {.sa_handler = on_stop};
  struct sigaction child = {.sa_handler = on_child, .sa_flags = SA_NOCLDSTOP | SA_RESTART};
  if (sigaction(SIGINT, &stop, NULL) < 0 || sigaction(SIGTERM, &stop, NULL) < 0 ||
      sigaction(SIGCHLD, &child, NULL) < 0) {
    perror("pause: sigaction");
    return 1;
  }

  for (;;) {
    pause();
  }
}

// dslaunch: placeholder until the CLI lands (foundation issue).
int main() { return 0; }

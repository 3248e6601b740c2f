package main

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/transform"
)

// dataset is one fixture: its file name stem and its records, in file order.
type dataset struct {
	name string
	recs []*transform.Record
}

func datasets() []dataset {
	return []dataset{
		{name: "folders", recs: folders()},
		{name: "cars", recs: cars()},
		{name: "org", recs: org()},
	}
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
func ni(v int) types.AttributeValue   { return n(strconv.Itoa(v)) }
func b(v bool) types.AttributeValue   { return &types.AttributeValueMemberBOOL{Value: v} }

func strs(v ...string) types.AttributeValue {
	l := make([]types.AttributeValue, len(v))
	for i, e := range v {
		l[i] = s(e)
	}
	return &types.AttributeValueMemberL{Value: l}
}

// folderEntries is a file system: a path ending in / is a directory, and a
// file's size follows its path. Ids are the paths without the trailing /.
var folderEntries = []struct {
	path string
	size int
}{
	{"home/", 0},
	{"home/zoe/", 0},
	{"home/zoe/Documents/", 0},
	{"home/zoe/Documents/Tax 2023/", 0},
	{"home/zoe/Documents/Tax 2023/receipts/", 0},
	{"home/zoe/Documents/Tax 2023/receipts/2023-03 hardware store.pdf", 184_233},
	{"home/zoe/Documents/Tax 2023/receipts/2023-07 dentist.pdf", 96_412},
	{"home/zoe/Documents/Tax 2023/return.final.v2.pdf", 1_204_775},
	{"home/zoe/Documents/CV.docx", 48_120},
	{"home/zoe/Pictures/", 0},
	{"home/zoe/Pictures/Iceland 2019/", 0},
	{"home/zoe/Pictures/Iceland 2019/IMG_0001.jpg", 4_812_003},
	{"home/zoe/Pictures/Iceland 2019/IMG_0002.jpg", 5_020_118},
	{"home/zoe/Pictures/Iceland 2019/raw/", 0},
	{"home/zoe/Pictures/Iceland 2019/raw/IMG_0001.CR2", 25_612_480},
	{"home/zoe/.config/", 0},
	{"home/zoe/.config/git/", 0},
	{"home/zoe/.config/git/config", 212},
	{"home/zoe/.bashrc", 3_771},
	{"home/zoe/notes.txt", 0},
	{"home/max/", 0},
	{"home/max/projects/", 0},
	{"home/max/projects/treeport/", 0},
	{"home/max/projects/treeport/go.mod", 1_024},
	{"home/max/projects/treeport/main.go", 2_310},
	{"home/max/projects/treeport/README.md", 8_402},
	{"home/max/projects/treeport/.git/", 0},
	{"home/max/projects/treeport/.git/HEAD", 21},
	{"home/max/projects/treeport/.git/refs/", 0},
	{"home/max/projects/treeport/.git/refs/heads/", 0},
	{"home/max/projects/treeport/.git/refs/heads/main", 41},
	{"home/max/Downloads/", 0},
	{"home/max/Downloads/go1.26.linux-amd64.tar.gz", 75_122_960},
	{"home/max/Downloads/Meeting notes (draft).odt", 22_050},
	{"srv/", 0},
	{"srv/www/", 0},
	{"srv/www/example.org/", 0},
	{"srv/www/example.org/index.html", 6_120},
	{"srv/www/example.org/assets/", 0},
	{"srv/www/example.org/assets/css/", 0},
	{"srv/www/example.org/assets/css/site.min.css", 31_877},
	{"srv/www/example.org/assets/img/", 0},
	{"srv/www/example.org/assets/img/logo.svg", 4_410},
	{"srv/backups/", 0},
	{"srv/backups/db/", 0},
	{"srv/backups/db/2024-06-01.sql.gz", 301_200_113},
	{"srv/backups/db/2024-06-02.sql.gz", 301_998_402},
	{"srv/backups/db/2024-06-03.sql.gz", 302_410_087},
	{"srv/data/", 0},
	{"srv/data/shared drive/", 0},
	{"srv/data/shared drive/Q3 report.xlsx", 88_761},
	{"srv/data/shared drive/budget, final.csv", 12_004},
	{"srv/data/shared drive/\"quoted\" name.txt", 17},
}

// Tags and access lists of a few folder entries, by id.
var (
	folderTags = map[string][]string{
		"home/zoe/Documents/Tax 2023":                 {"tax", "2023", "keep 10 years"},
		"home/zoe/Pictures/Iceland 2019":              {"travel", "family"},
		"srv/www/example.org/assets/css/site.min.css": {"generated"},
		"srv/backups/db":                              {"backup", "nightly"},
		"home/zoe/notes.txt":                          {},
	}
	folderACLs = map[string][3]string{ // owner, group, mode
		"home/zoe":            {"zoe", "staff", "0750"},
		"home/max":            {"max", "staff", "0750"},
		"srv/www/example.org": {"www-data", "www-data", "0755"},
		"srv/backups":         {"root", "backup", "0700"},
		"srv/data/shared drive": {
			"root", "shared", "2775",
		},
	}
)

// folders is a folder hierarchy with two roots, home and srv.
func folders() []*transform.Record {
	t := time.Date(2023, 1, 9, 8, 30, 0, 0, time.UTC)
	var recs []*transform.Record
	for i, e := range folderEntries {
		dir := strings.HasSuffix(e.path, "/")
		id := strings.TrimSuffix(e.path, "/")
		parent, name := "", id
		if k := strings.LastIndexByte(id, '/'); k >= 0 {
			parent, name = id[:k], id[k+1:]
		}
		size := e.size
		if dir {
			size = 4096
		}
		attrs := transform.Attrs{
			"name":       s(name),
			"size_bytes": ni(size),
			"is_dir":     b(dir),
			"modified":   s(t.Add(time.Duration(i*7919) * time.Minute).Format(time.RFC3339)),
		}
		if tags, ok := folderTags[id]; ok {
			attrs["tags"] = strs(tags...)
		}
		if acl, ok := folderACLs[id]; ok {
			attrs["acl"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
				"owner": s(acl[0]), "group": s(acl[1]), "mode": s(acl[2]),
			}}
		}
		recs = append(recs, &transform.Record{ID: id, Parent: parent, Attrs: attrs})
	}
	return recs
}

// carParts is a car's bill of materials. CM20 is a sibling of CM2, so a
// descendants query of CM2 that forgets the path delimiter finds CM20's
// subtree too.
var carParts = []struct {
	id, parent, name, partNo string
	weightKg                 string // decimal text
	qty                      int
	supplier, country        string // "" for an in-house assembly
	materials                []string
}{
	{"CM1", "", "Roadster T-26", "T26-000", "1184.5", 1, "", "", nil},
	{"CM2", "CM1", "Powertrain", "T26-100", "312.75", 1, "", "", nil},
	{"CM3", "CM2", "Engine", "T26-110", "148.2", 1, "", "", nil},
	{"CM4", "CM3", "Cylinder head", "T26-111", "18.4", 1, "Kolben & Söhne", "DE", []string{"aluminium alloy"}},
	{"CM5", "CM4", "Valve train", "T26-112", "6.35", 1, "", "", nil},
	{"CM6", "CM5", "Camshaft", "T26-113", "3.125", 2, "Nippon Cam K.K.", "JP", []string{"chilled cast iron"}},
	{"CM7", "CM6", "Cam lobe sensor", "T26-114", "0.042", 2, "Sensortek", "KR", []string{"copper", "ABS"}},
	{"CM8", "CM5", "Intake valve", "T26-115", "0.085", 8, "Válvulas Ibéricas", "ES", []string{"stainless steel"}},
	{"CM9", "CM5", "Exhaust valve", "T26-116", "0.091", 8, "Válvulas Ibéricas", "ES", []string{"Inconel"}},
	{"CM10", "CM4", "Head gasket", "T26-117", "0.38", 1, "SealCo", "US", []string{"multi-layer steel", "graphite"}},
	{"CM11", "CM3", "Engine block", "T26-120", "61.5", 1, "Kolben & Söhne", "DE", []string{"grey cast iron"}},
	{"CM12", "CM11", "Piston", "T26-121", "0.47", 4, "Kolben & Söhne", "DE", []string{"aluminium alloy"}},
	{"CM13", "CM12", "Piston ring", "T26-122", "0.012", 12, "RingWorks", "IT", []string{"ductile iron", "chrome plating"}},
	{"CM14", "CM11", "Crankshaft", "T26-123", "21.9", 1, "Nippon Cam K.K.", "JP", []string{"forged steel"}},
	{"CM15", "CM2", "Transmission", "T26-130", "52.3", 1, "", "", nil},
	{"CM16", "CM15", "Gearbox housing", "T26-131", "14.8", 1, "Getriebe Nord", "DE", []string{"magnesium alloy"}},
	{"CM17", "CM15", "Clutch", "T26-132", "7.45", 1, "", "", nil},
	{"CM18", "CM17", "Clutch plate", "T26-133", "2.2", 1, "Friction Ltd", "GB", []string{"steel", "organic friction lining"}},
	{"CM19", "CM2", "Exhaust system", "T26-140", "24.6", 1, "SealCo", "US", []string{"stainless steel", "ceramic"}},
	{"CM20", "CM1", "Chassis", "T26-200", "286.4", 1, "", "", nil},
	{"CM21", "CM20", "Front axle", "T26-210", "58.1", 1, "", "", nil},
	{"CM22", "CM21", "Wheel, front left", "T26-211", "21.35", 1, "", "", nil},
	{"CM23", "CM22", "Tyre 205/55 R16", "T26-212", "8.9", 1, "Pneus du Nord", "FR", []string{"natural rubber", "steel belt", "nylon"}},
	{"CM24", "CM22", "Rim 16\"", "T26-213", "9.8", 1, "Ruote Leggere", "IT", []string{"aluminium alloy"}},
	{"CM25", "CM22", "Wheel bolt", "T26-214", "0.065", 5, "Bolt & Nut Co", "US", []string{"steel"}},
	{"CM26", "CM21", "Wheel, front right", "T26-215", "21.35", 1, "", "", nil},
	{"CM27", "CM20", "Brake system", "T26-220", "31.7", 1, "", "", nil},
	{"CM28", "CM27", "Brake disc", "T26-221", "6.4", 4, "Frenos Sur", "ES", []string{"grey cast iron"}},
	{"CM29", "CM27", "Brake caliper", "T26-222", "2.95", 4, "Frenos Sur", "ES", []string{"aluminium alloy"}},
	{"CM30", "CM29", "Brake pad", "T26-223", "0.33", 8, "Friction Ltd", "GB", []string{"ceramic", "copper-free compound"}},
	{"CM31", "CM1", "Body", "T26-300", "342", 1, "", "", nil},
	{"CM32", "CM31", "Door, front left", "T26-310", "28.6", 1, "", "", nil},
	{"CM33", "CM32", "Window glass", "T26-311", "4.75", 1, "Vidros Lusos", "PT", []string{"laminated glass"}},
	{"CM34", "CM32", "Door handle", "T26-312", "0.21", 1, "Klamki Łódź", "PL", []string{"zinc die-cast", "chrome plating"}},
	{"CM35", "CM31", "Bonnet", "T26-320", "15.2", 1, "Kolben & Söhne", "DE", []string{"steel"}},
	{"CM36", "CM31", "Boot lid", "T26-330", "11.9", 1, "Kolben & Söhne", "DE", []string{"steel"}},
	{"CM37", "CM1", "Electrical", "T26-400", "38.05", 1, "", "", nil},
	{"CM38", "CM37", "Battery 12 V", "T26-410", "16.5", 1, "Ampère SA", "FR", []string{"lead", "sulfuric acid", "polypropylene"}},
	{"CM39", "CM37", "Wiring harness", "T26-420", "19.1", 1, "Sensortek", "KR", []string{"copper", "PVC"}},
	{"CM40", "CM37", "Engine control unit", "T26-430", "0.9", 1, "Sensortek", "KR", []string{"FR-4", "silicon"}},
	{"CM41", "CM1", "Interior", "T26-500", "154.3", 1, "", "", nil},
	{"CM42", "CM41", "Driver seat", "T26-510", "21.4", 1, "", "", nil},
	{"CM43", "CM42", "Seat frame", "T26-511", "9.6", 1, "Getriebe Nord", "DE", []string{"steel tube"}},
	{"CM44", "CM42", "Upholstery", "T26-512", "3.3", 1, "Tessuti Bianchi", "IT", []string{"leather", "foam"}},
	{"CM45", "CM41", "Dashboard", "T26-520", "12.25", 1, "", "", nil},
	{"CM46", "CM45", "Instrument cluster", "T26-521", "1.4", 1, "Sensortek", "KR", []string{"polycarbonate", "LCD"}},
	{"CM47", "CM41", "Steering wheel", "T26-530", "2.1", 1, "Tessuti Bianchi", "IT", []string{"magnesium", "leather"}},
	{"CM48", "CM20", "Rear axle", "T26-230", "49.75", 1, "Getriebe Nord", "DE", []string{"forged steel"}},
}

// cars is a car's bill of materials with CM-style ids.
func cars() []*transform.Record {
	var recs []*transform.Record
	for _, p := range carParts {
		attrs := transform.Attrs{
			"name":      s(p.name),
			"part_no":   s(p.partNo),
			"weight_kg": n(p.weightKg),
			"qty":       ni(p.qty),
		}
		if p.supplier != "" {
			attrs["supplier"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
				"name": s(p.supplier), "country": s(p.country),
			}}
		}
		if p.materials != nil {
			attrs["materials"] = strs(p.materials...)
		}
		recs = append(recs, &transform.Record{ID: p.id, Parent: p.parent, Attrs: attrs})
	}
	return recs
}

// people is an org chart: id, manager, name, title, email, salary, remote,
// languages and nickname ("-" for none).
var people = []struct {
	id, manager, name, title, email string
	salary                          int
	remote                          bool
	languages                       []string
	nickname                        string
}{
	{"E001", "", "Zoë Åström", "Chief Executive Officer", "zoe.astrom@example.com", 310000, false, []string{"sv", "en", "de"}, "-"},
	{"E002", "E001", "Łukasz Żółć", "VP, Engineering", "lukasz.zolc@example.com", 245000, true, []string{"pl", "en"}, "Łuki"},
	{"E003", "E001", "王芳", "VP, Sales", "wang.fang@example.com", 238000, false, []string{"zh", "en"}, "-"},
	{"E004", "E001", "José Núñez", "Chief Financial Officer", "jose.nunez@example.com", 251000, false, []string{"es", "en", "pt"}, "Pepe"},
	{"E005", "E001", "Ngozi Ọ̀kọ́", "VP, People", "ngozi.oko@example.com", 219000, true, []string{"ig", "yo", "en"}, "-"},
	{"E006", "E002", "Björk Guðmundsdóttir", "Director, Platform", "bjork.g@example.com", 198000, true, []string{"is", "en"}, "-"},
	{"E007", "E002", "Σωκράτης Παπαδόπουλος", "Director, Product Engineering", "sokratis.p@example.com", 196500, false, []string{"el", "en", "fr"}, "Socrates"},
	{"E008", "E006", "Amélie Dubois", "Engineering Manager, Storage", "amelie.dubois@example.com", 172000, false, []string{"fr", "en"}, "-"},
	{"E009", "E006", "Kwame Mensah", "Engineering Manager, Networking", "kwame.mensah@example.com", 171000, true, []string{"tw", "en"}, "-"},
	{"E010", "E008", "Søren Østergaard", "Staff Engineer", "soren.ostergaard@example.com", 168000, true, []string{"da", "en"}, "-"},
	{"E011", "E008", "Nguyễn Thị Mai", "Senior Engineer", "nguyen.mai@example.com", 149000, true, []string{"vi", "en"}, "-"},
	{"E012", "E008", "Liam O'Brien", "Engineer", "liam.obrien@example.com", 118000, false, []string{"en", "ga"}, "-"},
	{"E013", "E008", "Priya Raghunathan", "Engineer", "priya.r@example.com", 121000, true, []string{"ta", "hi", "en"}, "🚀 Rocket"},
	{"E014", "E009", "김민준", "Senior Engineer", "minjun.kim@example.com", 151000, false, []string{"ko", "en"}, "-"},
	{"E015", "E009", "Олег Смирнов", "Site Reliability Engineer", "oleg.smirnov@example.com", 139000, true, []string{"ru", "en"}, "-"},
	{"E016", "E009", "Aoife Ní Bhriain", "Engineer", "aoife.nibhriain@example.com", 117500, true, []string{"ga", "en"}, ""},
	{"E017", "E007", "Jürgen Müller", "Engineering Manager, Mobile", "juergen.mueller@example.com", 169000, false, []string{"de", "en"}, "-"},
	{"E018", "E017", "İpek Yılmaz", "Senior iOS Engineer", "ipek.yilmaz@example.com", 147000, false, []string{"tr", "en", "de"}, "-"},
	{"E019", "E017", "Mary-Jane \"MJ\" Watson", "Android Engineer", "mj.watson@example.com", 124000, true, []string{"en"}, "MJ"},
	{"E020", "E017", "Tomás Ó Súilleabháin", "Android Engineer", "tomas.osuilleabhain@example.com", 122500, true, []string{"ga", "en"}, "-"},
	{"E021", "E007", "Fatima Zahra El Amrani", "Product Designer", "fatima.elamrani@example.com", 131000, false, []string{"ar", "fr", "en"}, "-"},
	{"E022", "E003", "Chidi Okeke", "Sales Director, EMEA", "chidi.okeke@example.com", 176000, false, []string{"ig", "en", "fr"}, "-"},
	{"E023", "E003", "Ana María García", "Sales Director, Americas", "anamaria.garcia@example.com", 178500, true, []string{"es", "en"}, "Anita"},
	{"E024", "E022", "Hans-Peter Schäfer", "Account Executive", "hp.schaefer@example.com", 98000, false, []string{"de", "en"}, "-"},
	{"E025", "E022", "Élodie Lefèvre", "Account Executive", "elodie.lefevre@example.com", 96500, false, []string{"fr", "en"}, "-"},
	{"E026", "E022", "Małgorzata Wiśniewska", "Sales Engineer", "m.wisniewska@example.com", 112000, true, []string{"pl", "en", "de"}, "Gosia"},
	{"E027", "E023", "João Conceição", "Account Executive", "joao.conceicao@example.com", 94000, true, []string{"pt", "es", "en"}, "-"},
	{"E028", "E023", "Camila Rodríguez", "Account Executive", "camila.rodriguez@example.com", 95500, false, []string{"es", "en"}, "-"},
	{"E029", "E023", "Dương Văn Hùng", "Sales Engineer", "duong.hung@example.com", 109000, true, []string{"vi", "en"}, "-"},
	{"E030", "E003", "田中 陽子", "Sales Operations Manager", "yoko.tanaka@example.com", 132000, false, []string{"ja", "en"}, "-"},
	{"E031", "E030", "Arjun Mehta", "Sales Analyst", "arjun.mehta@example.com", 88000, true, []string{"hi", "gu", "en"}, "-"},
	{"E032", "E004", "Ingrid Bjørnstad", "Controller", "ingrid.bjornstad@example.com", 158000, false, []string{"no", "en"}, "-"},
	{"E033", "E032", "Pieter van der Berg", "Accountant", "pieter.vanderberg@example.com", 86000, false, []string{"nl", "en", "de"}, "-"},
	{"E034", "E032", "Siobhán Kavanagh", "Accountant", "siobhan.kavanagh@example.com", 84500, true, []string{"en", "ga"}, "-"},
	{"E035", "E004", "Ahmed Hassan", "Treasury Manager", "ahmed.hassan@example.com", 141000, false, []string{"ar", "en"}, "-"},
	{"E036", "E035", "Zsófia Kovács", "Financial Analyst", "zsofia.kovacs@example.com", 91000, true, []string{"hu", "en"}, "Zsofi"},
	{"E037", "E005", "Thandiwe Ndlovu", "HR Business Partner", "thandiwe.ndlovu@example.com", 118000, true, []string{"zu", "en"}, "-"},
	{"E038", "E005", "Matthias Bäumer", "Recruiting Lead", "matthias.baeumer@example.com", 121000, false, []string{"de", "en"}, "-"},
	{"E039", "E038", "Chloé Martin", "Recruiter", "chloe.martin@example.com", 79000, true, []string{"fr", "en"}, "-"},
	{"E040", "E038", "Rafał Nowak", "Recruiter", "rafal.nowak@example.com", 78500, true, []string{"pl", "en"}, "-"},
	{"E041", "E038", "Leilani Kahananui", "Recruiting Coordinator", "leilani.k@example.com", 68000, true, []string{"haw", "en"}, "Lei 🌺"},
	{"E042", "E010", "Oğuz Kaya", "Engineer", "oguz.kaya@example.com", 115000, true, []string{"tr", "en"}, "-"},
	{"E043", "E010", "Eeva Mäkinen", "Engineer", "eeva.makinen@example.com", 116500, false, []string{"fi", "sv", "en"}, "-"},
	{"E044", "E014", "Björn Lindqvist", "Engineer", "bjorn.lindqvist@example.com", 114000, false, []string{"sv", "en"}, "-"},
	{"E045", "E007", "Ravi Shankar Iyer", "Technical Program Manager", "ravi.iyer@example.com", 142000, true, []string{"ta", "en"}, "-"},
	{"E046", "E001", "Grace Achieng'", "Executive Assistant", "grace.achieng@example.com", 72000, false, []string{"sw", "luo", "en"}, "-"},
}

// managerSince are the dates people started managing, by id.
var managerSince = map[string]string{
	"E001": "2016-03-01", "E002": "2018-09-17", "E003": "2017-05-02", "E004": "2019-01-07", "E005": "2020-02-03",
	"E006": "2019-11-04", "E007": "2021-06-14", "E008": "2020-08-31", "E009": "2022-01-10", "E010": "2023-04-03",
	"E014": "2024-02-19", "E017": "2021-10-01", "E022": "2018-04-16", "E023": "2019-07-22", "E030": "2022-09-05",
	"E032": "2019-03-11", "E035": "2021-01-18", "E038": "2020-10-12",
}

// org is an org chart with non-ASCII names, in a fixed shuffled order in
// which people often come before their managers.
func org() []*transform.Record {
	var recs []*transform.Record
	for _, p := range people {
		attrs := transform.Attrs{
			"name":      s(p.name),
			"title":     s(p.title),
			"email":     s(p.email),
			"salary":    ni(p.salary),
			"remote":    b(p.remote),
			"languages": strs(p.languages...),
		}
		if p.nickname != "-" {
			attrs["nickname"] = s(p.nickname) // "" for one: DynamoDB allows empty non-key strings
		}
		if d, ok := managerSince[p.id]; ok {
			attrs["manager_since"] = s(d)
		}
		recs = append(recs, &transform.Record{ID: p.id, Parent: p.manager, Attrs: attrs})
	}
	// A fixed order, the same on every Go version: by a hash of the id.
	key := func(r *transform.Record) uint64 {
		h := fnv.New64a()
		fmt.Fprint(h, "org:", r.ID)
		z := h.Sum64() // then SplitMix64's finaliser, as FNV alone keeps ids that differ in the last byte close
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		return z ^ z>>31
	}
	slices.SortFunc(recs, func(a, b *transform.Record) int {
		ka, kb := key(a), key(b)
		switch {
		case ka < kb:
			return -1
		case ka > kb:
			return 1
		}
		return 0
	})
	return recs
}
